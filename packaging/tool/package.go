package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the "deb" packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the "rpm" packager
)

// writePackage builds the package of format ("deb", "rpm") described by the
// nfpm config at cfgPath into out, with every time stamp set to mtime.
func writePackage(format, cfgPath, out string, mtime time.Time) error {
	cfg, err := nfpm.ParseFile(cfgPath)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", format, cfgPath, err)
	}
	info, err := cfg.Get(format)
	if err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	info.MTime = mtime
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	pkg, err := nfpm.Get(format)
	if err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	var buf bytes.Buffer
	if err := pkg.Package(info, &buf); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	return nil
}
