package dockertest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOwnerLabelsRoundTrip(t *testing.T) {
	me := Self()
	require.Equal(t, os.Getpid(), me.PID)
	require.NotEmpty(t, me.Start, "no start time from /proc")
	got, ok := ownerFromLabels(me.Labels())
	require.True(t, ok)
	require.Equal(t, me, got)
	_, ok = ownerFromLabels(map[string]string{"org.testcontainers": "true"})
	require.False(t, ok, "a container without the owner label is not servegate's")
	_, ok = ownerFromLabels(map[string]string{LabelOwnerPID: "-3"})
	require.False(t, ok)
}

// TestOwnerGone checks the rule that decides which leftovers a new run
// removes: only owners it can prove gone.
func TestOwnerGone(t *testing.T) {
	me := Self()
	// A process that ran and was reaped: its pid is free (until reused).
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	deadPID := cmd.Process.Pid
	parent, err := procStart(os.Getppid())
	require.NoError(t, err)

	with := func(f func(*Owner)) Owner { o := me; f(&o); return o }
	for _, tc := range []struct {
		name  string
		owner Owner
		gone  bool
	}{
		{"this process", me, false},
		{"a live process", with(func(o *Owner) { o.PID, o.Start = os.Getppid(), parent }), false},
		{"an exited process", with(func(o *Owner) { o.PID = deadPID }), true},
		{"a reused pid", with(func(o *Owner) { o.PID, o.Start = os.Getppid(), parent+"0" }), true},
		{"this pid, another start", with(func(o *Owner) { o.Start = "1" }), true},
		{"an earlier boot", with(func(o *Owner) { o.PID, o.Boot = os.Getppid(), "another-boot" }), true},
		{"another host", with(func(o *Owner) { o.PID, o.Host = deadPID, "elsewhere pid:[1]" }), false},
		{"another host, earlier boot", with(func(o *Owner) { o.Host, o.Boot = "elsewhere", "another-boot" }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.gone, me.Gone(tc.owner))
		})
	}
	// Where this process cannot read /proc, nothing is ever judged gone.
	blind := with(func(o *Owner) { o.Start = "" })
	require.False(t, blind.Gone(with(func(o *Owner) { o.PID = deadPID })))
}

func TestProcStartMissing(t *testing.T) {
	_, err := procStart(1 << 30)
	require.True(t, os.IsNotExist(err), "%v", err)
}
