package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Workload D (issue 30) is a real tree, not files made up here: seven
// copies of the Go 1.26.8 distribution, built by scripts/workload-d.sh
// (pinned to that version; it checks it), with nested folders, many tiny
// files and some empty ones, as photo libraries and source trees have.

// treeWorkload is workload D with copies copies of the distribution: 7 in
// full, 1 in quick mode (15,036 files).
func treeWorkload(quick bool) loopWorkload {
	copies := 7
	if quick {
		copies = 1
	}
	return loopWorkload{name: "D", files: copies * goDistFiles, tree: copies}
}

// goDistFiles is the number of files of the Go 1.26.8 distribution, as
// scripts/workload-d.sh checks it.
const goDistFiles = 15036

// makeTree builds workload D into dir (which must not exist) with the
// script, or copies the tree given with --tree-d, and returns its file
// count and bytes.
func makeTree(ctx context.Context, dir string, w loopWorkload, given string) (files int, bytes int64, err error) {
	if given != "" {
		cp := exec.CommandContext(ctx, "cp", "-R", given, dir)
		cp.Stderr = os.Stderr
		if err := cp.Run(); err != nil {
			return 0, 0, fmt.Errorf("copy %s: %w", given, err)
		}
	} else {
		script := exec.CommandContext(ctx, "scripts/workload-d.sh", dir, fmt.Sprint(w.tree))
		script.Stdout, script.Stderr = os.Stderr, os.Stderr
		if err := script.Run(); err != nil {
			return 0, 0, fmt.Errorf("scripts/workload-d.sh (run from the repository root, or give --tree-d): %w", err)
		}
	}
	list, err := listTree(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range list {
		if e.kind == "file" {
			files++
			bytes += e.size
		}
	}
	return files, bytes, nil
}

// treeEntry is one thing in a tree: its path from the tree's root, its
// kind ("file", "dir", "symlink") and a file's size.
type treeEntry struct {
	path string
	kind string
	size int64
}

// listTree lists everything under root, sorted by path.
func listTree(root string) ([]treeEntry, error) {
	var out []treeEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		e := treeEntry{path: filepath.ToSlash(rel)}
		switch {
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			e.kind, e.size = "file", info.Size()
		case d.IsDir():
			e.kind = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			e.kind = "symlink"
		default:
			e.kind = "other"
		}
		out = append(out, e)
		return nil
	})
	slices.SortFunc(out, func(a, b treeEntry) int { return strings.Compare(a.path, b.path) })
	return out, err
}

// sameTreeShape checks that dst holds src's tree: every file with its
// size, every folder (empty ones too) and every symbolic link. Tools put
// the tree either into dst itself (rsync src/) or into dst/base(src)
// (Ferry, croc, scp -r of the folder).
func sameTreeShape(src, dst string) error {
	if _, err := os.Stat(filepath.Join(dst, filepath.Base(src))); err == nil {
		dst = filepath.Join(dst, filepath.Base(src))
	}
	want, err := listTree(src)
	if err != nil {
		return err
	}
	got, err := listTree(dst)
	if err != nil {
		return err
	}
	gotBy := make(map[string]treeEntry, len(got))
	for _, e := range got {
		gotBy[e.path] = e
	}
	var missing, differ []string
	for _, w := range want {
		g, ok := gotBy[w.path]
		switch {
		case !ok:
			missing = append(missing, w.kind+" "+w.path)
		case g != w:
			differ = append(differ, fmt.Sprintf("%s (%s %d bytes, want %s %d)", w.path, g.kind, g.size, w.kind, w.size))
		}
		delete(gotBy, w.path)
	}
	if len(missing)+len(differ)+len(gotBy) == 0 {
		return nil
	}
	var extra []string
	for p := range gotBy {
		if !strings.HasSuffix(p, ".partial") || len(extra) < 3 {
			extra = append(extra, p)
		}
	}
	slices.Sort(extra)
	return fmt.Errorf("the tree arrived different: %d missing (%s), %d differ (%s), %d extra (%s)",
		len(missing), firstFew(missing), len(differ), firstFew(differ), len(gotBy), firstFew(extra))
}

func firstFew(xs []string) string {
	if len(xs) > 3 {
		return strings.Join(xs[:3], ", ") + ", ..."
	}
	return strings.Join(xs, ", ")
}

// copyCeiling copies the tree with cp -R, no network: the floor a tree
// transfer on this disk can reach.
func copyCeiling(ctx context.Context, src, dst string) (loopResult, error) {
	start := time.Now()
	cp := exec.CommandContext(ctx, "cp", "-R", src, dst)
	out, err := cp.CombinedOutput()
	if err != nil {
		return loopResult{}, fmt.Errorf("cp: %w: %s", err, out)
	}
	secs := time.Since(start).Seconds()
	return loopResult{seconds: secs, cpuSend: cpuSeconds(cp.ProcessState)}, nil
}

// pipeCeiling copies the tree through tar c | tar x: the reading and the
// writing in two processes, as a transfer splits them, without a network,
// encryption or hashing. On a tree of many small files this is the floor of
// a two-process copy on this disk; cp -R does both in one process.
func pipeCeiling(ctx context.Context, src, dst string) (loopResult, error) {
	pack := exec.CommandContext(ctx, "tar", "-C", filepath.Dir(src), "-cf", "-", filepath.Base(src))
	unpack := exec.CommandContext(ctx, "tar", "-C", dst, "-xf", "-")
	var packErr, unpackErr strings.Builder
	pack.Stderr, unpack.Stderr = &packErr, &unpackErr
	r, w, err := os.Pipe()
	if err != nil {
		return loopResult{}, err
	}
	pack.Stdout, unpack.Stdin = w, r
	start := time.Now()
	if err := unpack.Start(); err != nil {
		r.Close()
		w.Close()
		return loopResult{}, fmt.Errorf("tar x: %w", err)
	}
	err = pack.Start()
	r.Close() // the children hold their ends; tar x sees the end once tar c exits
	w.Close()
	if err != nil {
		unpack.Wait()
		return loopResult{}, fmt.Errorf("tar c: %w", err)
	}
	packDone, unpackDone := pack.Wait(), unpack.Wait()
	secs := time.Since(start).Seconds()
	// tar x first: when it fails, tar c dies of the closed pipe.
	if unpackDone != nil {
		return loopResult{}, fmt.Errorf("tar x: %w: %s", unpackDone, unpackErr.String())
	}
	if packDone != nil {
		return loopResult{}, fmt.Errorf("tar c: %w: %s", packDone, packErr.String())
	}
	return loopResult{seconds: secs, cpuSend: cpuSeconds(pack.ProcessState), cpuRecv: cpuSeconds(unpack.ProcessState)}, nil
}

// warmTree reads every file under dir once (the page cache), as loopWarm
// does for a flat folder.
func warmTree(dir string) error {
	buf := make([]byte, 1<<20)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		return err
	})
}

// topEntries lists the entries of dir (files and folders), for scp -r.
func topEntries(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	if len(out) == 0 {
		return nil, errors.New(dir + " is empty")
	}
	return out, nil
}
