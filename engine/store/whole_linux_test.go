package store

import "testing"

// Where linkat refuses AT_EMPTY_PATH (Linux before 6.10, without a
// privilege), a whole file is linked through /proc/self/fd, and still never
// over anything.
func TestWholeFileLinkedThroughProc(t *testing.T) {
	was := emptyPathRefused.Load()
	emptyPathRefused.Store(true)
	t.Cleanup(func() { emptyPathRefused.Store(was) })
	d, dir := openDest(t)
	writeFile(t, dir, "a/x.txt", "old")
	p := createWhole(t, d, "a/x.txt")
	if _, err := p.WriteAt([]byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "a/x.txt", 3); err != nil || saved != "a/x (1).txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{"a/x.txt": "old", "a/x (1).txt": "new"})
}
