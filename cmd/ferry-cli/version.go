package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/ferrydrop/ferry/internal/version"
)

func init() {
	register(command{name: "version", summary: "print the version and commit of this build (also --version)", run: runVersion})
}

func runVersion(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, _ := newFlagSet("version", errOut)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	v := version.Get()
	if *asJSON {
		return json.NewEncoder(out).Encode(map[string]string{
			"version": v.Version, "commit": v.Commit, "date": v.Date,
			"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH,
		})
	}
	fmt.Fprintln(out, "ferry-cli", v)
	return nil
}
