package main

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// A tool killed by its timeout whose child still holds the output pipe (as
// rsync's ssh does) does not keep runCmd waiting for that child.
func TestRunCmdDoesNotWaitForOrphans(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := runCmd(exec.CommandContext(ctx, "sh", "-c", "sleep 120 & wait"))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a killed command reported success")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("runCmd still waits for the killed command's child after a minute")
	}
}
