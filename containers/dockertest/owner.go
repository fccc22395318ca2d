package dockertest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The labels every container servegate starts carries (see Owned). They name
// the process that started it, so that a later process can tell whether the
// owner is gone: the pid, the pid's start time (to see through pid reuse),
// and where that pid means something (host name and pid namespace) and since
// when (boot id).
const (
	// LabelOwnerPID is the owning process's id.
	LabelOwnerPID = "servegate.owner.pid"
	// LabelOwnerStart is the owning process's start time in clock ticks
	// after boot (field 22 of /proc/<pid>/stat); empty where unknown.
	LabelOwnerStart = "servegate.owner.start"
	// LabelOwnerHost is the owner's host name and pid namespace
	// ("name pid:[inode]"): pids are compared only within the same one.
	LabelOwnerHost = "servegate.owner.host"
	// LabelOwnerBoot is the owner's kernel boot id: after a reboot every
	// owner of an earlier boot is gone.
	LabelOwnerBoot = "servegate.owner.boot"
)

// An Owner identifies a process that starts containers.
type Owner struct {
	PID   int
	Start string // clock ticks after boot; "" when unknown
	Host  string // host name and pid namespace
	Boot  string // kernel boot id; "" when unknown
}

// Labels are o's container labels.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		LabelOwnerPID:   strconv.Itoa(o.PID),
		LabelOwnerStart: o.Start,
		LabelOwnerHost:  o.Host,
		LabelOwnerBoot:  o.Boot,
	}
}

// ownerFromLabels reads an Owner back from container labels; ok is false when
// the container carries no owner pid.
func ownerFromLabels(l map[string]string) (o Owner, ok bool) {
	pid, err := strconv.Atoi(l[LabelOwnerPID])
	if err != nil || pid <= 0 {
		return Owner{}, false
	}
	return Owner{PID: pid, Start: l[LabelOwnerStart], Host: l[LabelOwnerHost], Boot: l[LabelOwnerBoot]}, true
}

var self = sync.OnceValue(func() Owner {
	pid := os.Getpid()
	start, _ := procStart(pid)
	host, _ := os.Hostname()
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		host += " " + ns
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return Owner{PID: pid, Start: start, Host: host, Boot: strings.TrimSpace(string(boot))}
})

// Self is this process as an Owner.
func Self() Owner { return self() }

// Gone reports whether the owner o of a container has exited, judged from
// the process me: true only when it can tell. An owner on another host or
// pid namespace, or one whose liveness cannot be read, is never gone (its
// containers are not ours to remove).
func (me Owner) Gone(o Owner) bool {
	if o.Host != me.Host || me.Start == "" {
		return false // another machine or namespace, or no /proc here
	}
	if o.Boot != "" && me.Boot != "" && o.Boot != me.Boot {
		return true
	}
	if o.PID == me.PID {
		return o.Start != me.Start
	}
	start, err := procStart(o.PID)
	if os.IsNotExist(err) {
		return true
	}
	if err != nil {
		return false
	}
	return o.Start != "" && start != o.Start
}

// procStart returns the start time of process pid in clock ticks after boot
// (field 22 of /proc/<pid>/stat). An error satisfying os.IsNotExist means
// there is no such process.
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces or
	// parentheses itself: the fields after it start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	const startField = 22 - 3 // fields 3.. follow the name
	if len(f) <= startField {
		return "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return f[startField], nil
}
