package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ferrydrop/ferry/engine"
)

func init() {
	register(command{name: "id", summary: "print this device's name and ID", run: runID})
}

func runID(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("id", errOut)
	name := fs.String("name", "", "device `NAME` (default: the host name)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: id takes no arguments, got %q", errUsage, fs.Args())
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	e, err := engine.New(engine.Options{ConfigDir: dir, Name: *name})
	if err != nil {
		return err
	}
	defer e.Close()
	if *asJSON {
		return json.NewEncoder(out).Encode(map[string]string{"name": e.Name(), "id": e.ID(), "human_id": e.HumanID()})
	}
	fmt.Fprintf(out, "name: %s\nid:   %s\n", e.Name(), e.HumanID())
	return nil
}
