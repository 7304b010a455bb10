//go:build !linux

package main

// onTmpfs: only Linux is checked; elsewhere every folder counts as a disk.
func onTmpfs(string) bool { return false }
