package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the "deb" packager
)

// writeDeb builds the package described by the nfpm config at cfgPath into
// out, with every time stamp set to mtime.
func writeDeb(cfgPath, out string, mtime time.Time) error {
	cfg, err := nfpm.ParseFile(cfgPath)
	if err != nil {
		return fmt.Errorf("deb: %s: %w", cfgPath, err)
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	info.MTime = mtime
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	var buf bytes.Buffer
	if err := pkg.Package(info, &buf); err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	return nil
}
