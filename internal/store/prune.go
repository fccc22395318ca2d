package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MinKeepCommits is the fewest commits a prune by count keeps: the
// change-point gate (E-divisive, at least 3 commits on each side of a change)
// finds nothing in fewer.
const MinKeepCommits = 6

// MaxKeepDays bounds a prune by age (ten years).
const MaxKeepDays = 3650

// staleAdd is the age after which a prune removes a leftover temporary
// add directory (an add that crashed).
const staleAdd = time.Hour

// A Retention says which commits a prune keeps. A commit is kept when
// either rule keeps it (a zero rule keeps nothing by itself). Whatever
// the rules, a prune keeps every runner type's baselines: for each
// benchmark, the newest commit that holds a valid result line of it
// (not interrupted, not invalid) at that benchmark's newest scenario
// hash. That is the commit a pull request's gate compares against, and
// where the history of the current scenario version ends.
type Retention struct {
	// KeepCommits keeps each runner type's newest N commits (N >=
	// MinKeepCommits).
	KeepCommits int
	// KeepDays keeps commits whose commit time is within D days of Now
	// (1 <= D <= MaxKeepDays).
	KeepDays int
	// Now is the time KeepDays counts back from; zero means time.Now.
	Now time.Time
	// DryRun reports what would go without removing anything.
	DryRun bool
}

// A PruneReport says what a prune removed and kept.
type PruneReport struct {
	// Removed are "runner/commit" of the commits removed (or, in a dry
	// run, that would be).
	Removed []string
	// Kept counts the commits kept; Baselines are "runner/commit
	// (benchmark)" of those kept only as baselines.
	Kept      int
	Baselines []string
	// Leftovers are temporary directories of crashed adds removed.
	Leftovers []string
}

// Prune removes the commits the retention does not keep. It holds the
// store's lock alone, so no add runs meanwhile, and renames each commit
// directory away before deleting it, so a reader never sees half a
// commit. It reads (and so checks) every commit first: a torn store is
// an error and nothing is removed.
func (s *Store) Prune(ret Retention) (*PruneReport, error) {
	if ret.KeepCommits == 0 && ret.KeepDays == 0 {
		return nil, errors.New("prune: give the commits to keep (keep-commits) or the days (keep-days)")
	}
	if ret.KeepCommits != 0 && ret.KeepCommits < MinKeepCommits {
		return nil, fmt.Errorf("prune: keep-commits %d: keep at least %d, the fewest in which the change-point gate can find a change", ret.KeepCommits, MinKeepCommits)
	}
	if ret.KeepDays < 0 || ret.KeepDays > MaxKeepDays {
		return nil, fmt.Errorf("prune: keep-days %d: want 1 to %d", ret.KeepDays, MaxKeepDays)
	}
	if ret.KeepCommits < 0 {
		return nil, fmt.Errorf("prune: keep-commits %d: want %d or more", ret.KeepCommits, MinKeepCommits)
	}
	now := ret.Now
	if now.IsZero() {
		now = time.Now()
	}
	unlock, err := s.lock(true)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	defer unlock()
	runners, err := s.Runners()
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	rep := &PruneReport{}
	type victim struct{ runner, commit string }
	var victims []victim
	for _, runner := range runners {
		commits, _, err := s.commits(runner) // the lock is held
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		keep := make([]bool, len(commits))
		for i, c := range commits {
			if ret.KeepCommits > 0 && i >= len(commits)-ret.KeepCommits {
				keep[i] = true
			}
			if ret.KeepDays > 0 && !c.Time.Before(now.AddDate(0, 0, -ret.KeepDays)) {
				keep[i] = true
			}
		}
		for name, i := range baselines(commits) {
			if !keep[i] {
				keep[i] = true
				rep.Baselines = append(rep.Baselines, fmt.Sprintf("%s/%s (%s)", runner, commits[i].ID, name))
			}
		}
		for i, c := range commits {
			if keep[i] {
				rep.Kept++
			} else {
				victims = append(victims, victim{runner, c.ID})
			}
		}
		rep.Leftovers = append(rep.Leftovers, leftovers(filepath.Join(s.Dir, runner), now)...)
	}
	slices.Sort(rep.Baselines)
	for _, v := range victims {
		rep.Removed = append(rep.Removed, v.runner+"/"+v.commit)
		if ret.DryRun {
			continue
		}
		dir := filepath.Join(s.Dir, v.runner, v.commit)
		var rnd [4]byte
		_, _ = rand.Read(rnd[:])
		trash := filepath.Join(s.Dir, v.runner, trashPrefix+v.commit+"-"+hex.EncodeToString(rnd[:]))
		if err := os.Rename(dir, trash); err != nil {
			return rep, fmt.Errorf("prune: %w", err)
		}
		if err := os.RemoveAll(trash); err != nil {
			return rep, fmt.Errorf("prune: %w", err)
		}
	}
	if !ret.DryRun {
		for _, l := range rep.Leftovers {
			if err := os.RemoveAll(filepath.Join(s.Dir, l)); err != nil {
				return rep, fmt.Errorf("prune: %w", err)
			}
		}
	}
	return rep, nil
}

// baselines maps each benchmark of commits (oldest first) to the index
// of the newest commit holding a valid result line of it at its newest
// scenario hash.
func baselines(commits []*Commit) map[string]int {
	out := map[string]int{}
	newestSHA := map[string]string{}
	for i := len(commits) - 1; i >= 0; i-- {
		for name, b := range commits[i].Benchmarks() {
			sha, seen := newestSHA[name]
			if !seen {
				newestSHA[name], sha = b.ScenarioSHA, b.ScenarioSHA
			}
			if _, done := out[name]; !done && b.Valid > 0 && b.ScenarioSHA == sha {
				out[name] = i
			}
		}
	}
	return out
}

// leftovers lists, relative to the store, the temporary directories of
// adds older than staleAdd and of interrupted prunes under a runner
// directory.
func leftovers(runnerDir string, now time.Time) []string {
	var out []string
	store := filepath.Dir(runnerDir)
	check := func(dir, prefix string, age bool) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			if info, err := e.Info(); err == nil && (!age || now.Sub(info.ModTime()) > staleAdd) {
				rel, _ := filepath.Rel(store, filepath.Join(dir, e.Name()))
				out = append(out, rel)
			}
		}
	}
	check(runnerDir, trashPrefix, false)
	ents, _ := os.ReadDir(runnerDir)
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			check(filepath.Join(runnerDir, e.Name()), addPrefix, true)
		}
	}
	return out
}

// Baselines returns, for each benchmark of a runner type, its baseline
// commit: the newest commit holding a valid result line of it at its
// newest scenario hash (what a prune always keeps). A pull request's gate
// compares its head against the baseline's runs.
func (s *Store) Baselines(runner string) (map[string]*Commit, error) {
	commits, _, err := s.Commits(runner)
	if err != nil {
		return nil, err
	}
	out := map[string]*Commit{}
	for name, i := range baselines(commits) {
		out[name] = commits[i]
	}
	return out, nil
}
