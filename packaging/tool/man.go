package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// The manual pages are written from what the programs say about themselves,
// so that they cannot go stale: ferry-cli.1 from `ferry-cli help` (the
// commands) and `ferry-cli help COMMAND` (each command's flags), ferry.1 from
// the app's few flags below (the app is a cgo build that may not run where
// the packages are made).

// appFlags are the desktop app's flags (main.go), in ferry.1.
var appFlags = []cliFlag{
	{Name: "config", Arg: "DIR", Usage: "keep identity, trust, settings and history in DIR instead of the user config dir's Ferry folder (separate instances on one machine)"},
	{Name: "minimized", Usage: "start in the system tray (the login item uses it; only where a tray shows icons)"},
	{Name: "version", Usage: "print the version and commit of this build and exit"},
}

// cliCommand is one command of `ferry-cli help`.
type cliCommand struct {
	Name, Summary string
	Flags         []cliFlag
}

// cliFlag is one flag as the flag package prints it.
type cliFlag struct {
	Name, Arg, Usage string
}

var (
	commandLine = regexp.MustCompile(`^  ([a-z][a-z0-9-]*) +(\S.*)$`)
	flagLine    = regexp.MustCompile(`^  -([A-Za-z0-9-]+)(?: (\S+))?$`)
)

// parseCommands reads the command list of `ferry-cli help`.
func parseCommands(help string) []cliCommand {
	var cmds []cliCommand
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "commands:":
			in = true
		case in && commandLine.MatchString(l):
			m := commandLine.FindStringSubmatch(l)
			cmds = append(cmds, cliCommand{Name: m[1], Summary: m[2]})
		case in && strings.TrimSpace(l) == "":
			in = false
		}
	}
	return cmds
}

// parseFlags reads the flags of `ferry-cli help COMMAND` (the flag
// package's PrintDefaults: "  -name ARG" then usage lines indented with a tab).
func parseFlags(help string) []cliFlag {
	var flags []cliFlag
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		l := sc.Text()
		if m := flagLine.FindStringSubmatch(l); m != nil {
			flags = append(flags, cliFlag{Name: m[1], Arg: m[2]})
		} else if u, ok := strings.CutPrefix(l, "    \t"); ok && len(flags) > 0 {
			f := &flags[len(flags)-1]
			f.Usage = strings.TrimSpace(f.Usage + " " + u)
		}
	}
	return flags
}

// roff escapes text for a man page line: backslashes, minus signs (a
// hyphen in a flag or a path must stay a minus) and a leading dot or quote.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func writeFlags(b *strings.Builder, flags []cliFlag) {
	for _, f := range flags {
		if f.Arg != "" {
			fmt.Fprintf(b, ".TP\n.BI \"\\-\\-%s \" %s\n", roff(f.Name), roff(f.Arg))
		} else {
			fmt.Fprintf(b, ".TP\n.B \\-\\-%s\n", roff(f.Name))
		}
		b.WriteString(roff(f.Usage) + "\n")
	}
}

func manHeader(b *strings.Builder, name, version, date, what string) {
	fmt.Fprintf(b, ".TH %s 1 %q \"Ferry %s\" \"User Commands\"\n", strings.ToUpper(roff(name)), date, roff(version))
	fmt.Fprintf(b, ".SH NAME\n%s \\- %s\n", roff(name), roff(what))
}

// cliManPage is ferry-cli.1.
func cliManPage(cmds []cliCommand, version, date string) string {
	var b strings.Builder
	manHeader(&b, "ferry-cli", version, date, "send and receive files with nearby devices from a terminal")
	b.WriteString(".SH SYNOPSIS\n.B ferry\\-cli\n.I COMMAND\n.RI [ flags ]\n.br\n.B ferry\\-cli help\n.RI [ COMMAND ]\n")
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(roff("ferry-cli is Ferry's command-line client: it finds Ferry and LocalSend devices on the local network, sends files, folders and text to them and receives from them, like the desktop app ferry(1), without a display.") + "\n")
	b.WriteString(".PP\n" + roff("Flags are written --name VALUE or --name=VALUE, before the command's other arguments. ferry-cli help COMMAND, or COMMAND --help, prints a command's flags.") + "\n")
	b.WriteString(".SH COMMANDS\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, ".SS %s\n%s\n", roff(c.Name), roff(c.Summary))
		writeFlags(&b, c.Flags)
	}
	b.WriteString(".SH FILES\n" + roff("The identity, trusted devices, settings and history are kept in the user config dir's Ferry folder (~/.config/Ferry), or in the folder --config names; the app and ferry-cli share it.") + "\n")
	b.WriteString(".SH SEE ALSO\n.BR ferry (1)\n.PP\nhttps://github.com/ferrydrop/ferry\n")
	return b.String()
}

// appManPage is ferry.1.
func appManPage(version, date string) string {
	var b strings.Builder
	manHeader(&b, "ferry", version, date, "send files to nearby devices")
	b.WriteString(".SH SYNOPSIS\n.B ferry\n.RB [ \\-\\-config\n.IR DIR ]\n.RB [ \\-\\-minimized ]\n.RI [ FILE ...]\n.br\n.B ferry \\-\\-version\n")
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(roff("Ferry is a desktop app that sends files and folders to nearby computers and phones, found by themselves on the local network, and receives from them, also from the system tray. ferry-cli(1) does the same from a terminal.") + "\n")
	b.WriteString(".PP\n" + roff("FILEs open the device chooser to send them. One Ferry runs per config folder: a later launch hands its FILEs to the running one and exits (a file manager's \"Open with Ferry\" works this way).") + "\n")
	b.WriteString(".SH OPTIONS\n")
	writeFlags(&b, appFlags)
	b.WriteString(".SH SEE ALSO\n.BR ferry\\-cli (1)\n.PP\nhttps://github.com/ferrydrop/ferry\n")
	return b.String()
}

// writeManPages writes OUTDIR/ferry.1.gz and OUTDIR/ferry-cli.1.gz, the
// commands and flags of ferry-cli read from the CLI binary cli.
func writeManPages(outDir, cli, version, date string) error {
	help := func(args ...string) (string, error) {
		out, err := exec.Command(cli, append([]string{"help"}, args...)...).Output()
		if err != nil {
			return "", fmt.Errorf("man: %s help %s: %w", cli, strings.Join(args, " "), err)
		}
		return string(out), nil
	}
	list, err := help()
	if err != nil {
		return err
	}
	cmds := parseCommands(list)
	if len(cmds) == 0 {
		return fmt.Errorf("man: no commands in %s help:\n%s", cli, list)
	}
	for i := range cmds {
		h, err := help(cmds[i].Name)
		if err != nil {
			return err
		}
		cmds[i].Flags = parseFlags(h)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	for name, text := range map[string]string{
		"ferry.1.gz":     appManPage(version, date),
		"ferry-cli.1.gz": cliManPage(cmds, version, date),
	} {
		// gzip -9n: no name and no time in the header, as Debian wants
		// (and the same bytes every build).
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := zw.Write([]byte(text)); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(outDir, name), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("man: %w", err)
		}
	}
	return nil
}
