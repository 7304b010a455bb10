// Package filelock holds an exclusive lock on a file between processes
// (flock on Unix, LockFileEx on Windows), for files that several processes
// on one config folder write (the app, ferry-cli receive, ferry-cli
// devices): each re-reads and writes under it. The system drops a lock
// when its process ends, however it ends, so a crash leaves none behind.
package filelock
