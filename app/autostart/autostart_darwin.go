//go:build darwin

package autostart

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const label = "io.ferrydrop.ferry"

// Path is the LaunchAgent: ~/Library/LaunchAgents/io.ferrydrop.ferry.plist.
func Path() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("autostart: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", label+".plist"), nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Enable writes a LaunchAgent that runs Ferry at login.
func Enable(e Entry) error {
	p, err := Path()
	if err != nil {
		return err
	}
	exe, err := e.exe()
	if err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	var args strings.Builder
	for _, a := range append([]string{exe}, e.Args...) {
		args.WriteString("\t\t<string>" + xmlEscape(a) + "</string>\n")
	}
	body := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + label + `</string>
	<key>ProgramArguments</key>
	<array>
` + args.String() + `	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>ProcessType</key>
	<string>Interactive</string>
</dict>
</plist>
`
	if err := writeFileAtomic(p, []byte(body), 0o644); err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	return nil
}
