// Package store is servegate's results store: a plain directory that
// keeps the outputs of benchmark runs per runner type and commit, so that
// "servegate gate -history", "servegate history site" and the exports can
// read a project's history. It imports nothing of servegate (internal/gate
// imports it) and only the standard library and golang.org/x/perf.
//
// # Layout
//
//	STORE/
//	  servegate-history.json           {"layout": 1}: marks the directory as a store
//	  .lock                            flock(2) file: adds and readers share it, a prune holds it alone
//	  <runner>/                        one directory per runner type ("ubuntu-latest-4cpu")
//	    <commit>/                      one directory per commit (its full hash)
//	      .lock                        flock(2) file: an add holds it alone to check and file its run
//	      <run>/                       one directory per add: <UTC time>-<8 hex digits>
//	        manifest.json              the Manifest: commit, commit time, runner, scenario hashes, files
//	        test.benchfmt ...          the run's files, under their own base names
//	      .add-*/                      an add in progress (or one that crashed); readers skip it
//	    .trash-*/                      a commit being pruned; readers skip it
//
// # Writes are whole or absent
//
// An add writes its files and manifest into a fresh temporary directory
// next to the run directories (os.MkdirTemp: two writers never share a
// name), syncs them, and renames it to its run name, which is unique too.
// A reader sees a run whole or not at all, and two concurrent adds, even
// of the same commit, both land. There is no shared index to update: the
// commit list is derived by listing. A prune renames a commit directory
// away before it deletes it, and takes the store's lock exclusively so no
// add can land in a directory it is removing, and no reader (Commits,
// and ReadLock held while a run's files are read) loses a file under it.
//
// # Order
//
// Commits are ordered by their commit time (the committer date, as
// "git show -s --format=%cI" prints it), ties by hash. Every run of a
// commit must give the same commit time.
//
// # Limits
//
// A runner name is 1 to 64 characters of [A-Za-z0-9._-]; a commit 1 to 80
// of [A-Za-z0-9._-]; neither starts with a dot. An add takes at most
// MaxFiles files of at most MaxFileBytes each, and MaxRunBytes in all. It
// streams them and holds none in memory. A manifest, which readers hold
// whole, is at most MaxManifestBytes.
package store
