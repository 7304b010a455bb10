package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipeCeilingCopiesTheTree: the tar pipe lands the whole tree (files,
// empty files, empty folders, symbolic links) and reports both sides' CPU.
func TestPipeCeilingCopiesTheTree(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tree")
	for p, body := range map[string]string{
		"a/b/c.txt": strings.Repeat("x", 70000),
		"a/empty":   "",
		"top.go":    "package top\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(src, "d/none"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../top.go", filepath.Join(src, "a/link")); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	r, err := pipeCeiling(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameTreeShape(src, dst); err != nil {
		t.Fatal(err)
	}
	if r.seconds <= 0 || r.cpuSend <= 0 && r.cpuRecv <= 0 {
		t.Errorf("no time or CPU measured: %+v", r)
	}
}

// TestPipeCeilingReportsFailure: a destination tar x cannot write to is an
// error with tar's words, not a figure.
func TestPipeCeilingReportsFailure(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pipeCeiling(context.Background(), src, filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "tar x") {
		t.Fatalf("err = %v, want tar x's failure", err)
	}
}
