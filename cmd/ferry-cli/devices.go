package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{name: "devices", summary: "list the devices this one remembers (paired, trusted, known); --forget one", run: runDevices})
}

func runDevices(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("devices", errOut)
	forget := fs.String("forget", "", "forget the device with this `ID` (or ID prefix, or name): it is no longer paired, trusted or known here")
	asJSON := fs.Bool("json", false, "print one JSON object per device")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	e, err := engine.New(engine.Options{ConfigDir: dir})
	if err != nil {
		return err
	}
	defer e.Close()
	ps := e.Trusted()
	if *forget != "" {
		return forgetDevice(e, ps, *forget, out)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		for _, p := range ps {
			if err := enc.Encode(deviceJSON{ID: p.ID, Name: p.Name, Status: deviceStatus(p), Paired: p.Paired,
				Trusted: p.AlwaysAccept, LastSeen: p.LastSeen, LastAddr: p.LastAddr}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ps) == 0 {
		fmt.Fprintln(out, "No devices remembered yet: a device is remembered once it sent or received here, or was paired.")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSTATUS\tLAST SEEN\tLAST ADDRESS")
	for _, p := range ps {
		addr := p.LastAddr
		if addr == "" {
			addr = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.ReplaceAll(safetext.Name(p.Name), "\t", " "), short(p.ID), deviceStatus(p), seenAgo(p.LastSeen, now), addr)
	}
	return tw.Flush()
}

// deviceJSON is one remembered device in devices --json, named as the
// other commands' JSON is (snake_case).
type deviceJSON struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Status   string    `json:"status"`  // paired, trusted or known
	Paired   bool      `json:"paired"`  // its verification code was confirmed
	Trusted  bool      `json:"trusted"` // its offers are accepted without asking
	LastSeen time.Time `json:"last_seen"`
	LastAddr string    `json:"last_addr,omitempty"`
}

// deviceStatus is what a remembered device is to this one: paired (its
// code confirmed), trusted (accepted without asking) or only known.
func deviceStatus(p engine.TrustedPeer) string {
	switch {
	case p.Paired:
		return "paired"
	case p.AlwaysAccept:
		return "trusted"
	}
	return "known"
}

// seenAgo says when a device was last seen, roughly.
func seenAgo(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return t.Local().Format("2006-01-02")
}

// forgetDevice forgets the one remembered device query means (as send --to
// reads it: an ID, an ID prefix, a name); a name several devices bear is
// refused with their IDs.
func forgetDevice(e *engine.Engine, ps []engine.TrustedPeer, query string, out io.Writer) error {
	found := match(query, trustedCandidates(ps))
	switch len(found) {
	case 0:
		return fmt.Errorf("no remembered device is called or has the ID %s (ferry-cli devices lists them)", safetext.Name(query))
	case 1:
	default:
		ids := make([]string, len(found))
		called := true
		for i, c := range found {
			ids[i] = short(c.ID)
			called = called && strings.EqualFold(c.Name, strings.TrimSpace(query))
		}
		what := fmt.Sprintf("have IDs that start with %s", safetext.Name(query))
		if called {
			what = fmt.Sprintf("are called %q", strings.TrimSpace(query))
		}
		return fmt.Errorf("%d remembered devices %s, with the IDs %s: name the one to forget by its ID (--forget %s)",
			len(found), what, strings.Join(ids, ", "), ids[0])
	}
	c := found[0]
	var status string
	for _, p := range ps {
		if p.ID == c.ID {
			status = deviceStatus(p)
		}
	}
	if err := e.Forget(c.ID); err != nil {
		return fmt.Errorf("could not forget %s (%s): %w", safetext.Name(c.Name), short(c.ID), err)
	}
	switch status {
	case "known":
		fmt.Fprintf(out, "Forgot %s (%s), a device known here (not trusted).\n", safetext.Name(c.Name), short(c.ID))
	default:
		fmt.Fprintf(out, "Forgot %s (%s), %s until now: it is not trusted here any more; pair with it again to trust it.\n",
			safetext.Name(c.Name), short(c.ID), status)
	}
	return nil
}
