package bufpool

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestQuotaAndPoolBound(t *testing.T) {
	p := New(8<<10, 4<<10)
	a, b := p.Quota(6<<10), p.Quota(6<<10)
	ctx := t.Context()
	x, err := a.Get(ctx, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	// a's quota has 2 KiB left: a second 4 KiB buffer waits.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := a.Get(short, 4<<10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("over the quota: %v, want to wait until the deadline", err)
	}
	y, err := b.Get(ctx, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.InUse(); got != 8<<10 {
		t.Fatalf("in use %d", got)
	}
	// The pool is full: b waits until a returns its buffer.
	got := make(chan error, 1)
	go func() {
		z, err := b.Get(ctx, 2<<10)
		if err == nil {
			b.Put(z)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a full pool handed out a buffer (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	a.Put(x)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	b.Put(y)
	if p.InUse() != 0 || p.Idle() > 4<<10 {
		t.Fatalf("in use %d, idle %d after everything was returned", p.InUse(), p.Idle())
	}
	if _, err := a.Get(ctx, 7<<10); err == nil {
		t.Fatal("a buffer larger than the quota was handed out")
	}
	p.Trim()
	if p.Idle() != 0 {
		t.Fatal("Trim kept buffers")
	}
}

func TestBuffersAreUsableAndReused(t *testing.T) {
	p := New(1<<20, 1<<20)
	q := p.Quota(1 << 20)
	b, err := q.Get(t.Context(), 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 64<<10 {
		t.Fatalf("len %d", len(b))
	}
	for i := range b {
		b[i] = byte(i)
	}
	q.Put(b)
	c, _ := q.Get(t.Context(), 64<<10)
	if &c[0] != &b[0] {
		t.Error("a kept buffer was not reused")
	}
	q.Put(c)
}
