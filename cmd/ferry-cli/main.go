// Command ferry-cli is Ferry's headless client: it sends and receives files
// from a terminal, and drives Ferry's tests and benchmarks. It is pure Go and
// builds with CGO_ENABLED=0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"

	"github.com/ferrydrop/ferry/cmd/internal/ferryenv"
	"github.com/ferrydrop/ferry/engine"
)

// command is one ferry-cli subcommand. run gets the arguments after the
// subcommand's name and a context cancelled by Ctrl-C.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, out, errOut io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; each lives in its own file and calls this from init.
func register(c command) { commands[c.name] = c }

// errUsage marks an error caused by how the command was called (exit code 2).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signalContext()
	// FERRY_CPUPROFILE=FILE writes a CPU profile of the run (performance work).
	if path := os.Getenv("FERRY_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
		}
	}
	// FERRY_HEAPPROFILE=FILE writes a heap profile to FILE, and the
	// runtime's memory figures to FILE.json, each time the process gets
	// SIGUSR1 (ferry-bench hostile takes them at the receiver's peak).
	if path := os.Getenv("FERRY_HEAPPROFILE"); path != "" {
		heapProfileOnSignal(path)
	}
	// FERRY_MUTEXPROFILE=FILE and FERRY_BLOCKPROFILE=FILE write where the
	// run's goroutines waited for locks and blocked (performance work).
	mutexPath, blockPath := os.Getenv("FERRY_MUTEXPROFILE"), os.Getenv("FERRY_BLOCKPROFILE")
	if mutexPath != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if blockPath != "" {
		runtime.SetBlockProfileRate(10_000) // a sample per 10 µs blocked
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	writeProfile("mutex", mutexPath)
	writeProfile("block", blockPath)
	stop()
	os.Exit(code)
}

// interrupted is the cause of main's context when a signal ended it.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return i.sig.String() }

// ExitCode is the shell's convention for a command a signal ended: 130
// for Ctrl-C (SIGINT), 143 for SIGTERM.
func (i interrupted) ExitCode() int { return 128 + int(i.sig) }

// signalContext is a context that Ctrl-C or SIGTERM ends, with the signal
// as its cause (interrupted), as signal.NotifyContext's would be but for
// the signal being an error to branch on.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-c:
			sig, _ := s.(syscall.Signal)
			cancel(interrupted{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(c); cancel(nil) }
}

// writeProfile writes the named runtime profile to path, if path is set.
func writeProfile(name, path string) {
	if path == "" {
		return
	}
	if f, err := os.Create(path); err == nil {
		pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 {
		usage(errOut)
		return 2
	}
	// Help asked for is the output, not an error: standard output, so that
	// `ferry-cli help | less` shows it.
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if args[0] != "help" || len(args) == 1 {
			usage(out)
			return 0
		}
		// help COMMAND: the command's own flags.
		c, ok := commands[args[1]]
		if !ok {
			fmt.Fprintf(errOut, "ferry-cli help: unknown command %q\n", args[1])
			usage(errOut)
			return 2
		}
		return commandHelp(ctx, c, out, errOut)
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "ferry-cli: unknown command %q\n", args[0])
		usage(errOut)
		return 2
	}
	if asksHelp(args[1:]) {
		return commandHelp(ctx, c, out, errOut) // as help COMMAND: standard output
	}
	err := c.run(ctx, args[1:], out, errOut)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(errOut, "ferry-cli %s: %s\n", c.name, shown(err.Error()))
		return 2
	default:
		// An error can carry a peer's words (its name, its reason): escaped.
		fmt.Fprintf(errOut, "ferry-cli %s: %s\n", c.name, shown(err.Error()))
		var ec interface{ ExitCode() int }
		if errors.As(context.Cause(ctx), &ec) || errors.As(err, &ec) {
			// Ended by Ctrl-C (SIGTERM): 128+the signal, as a shell
			// says of a command a signal ended, whatever the command made
			// of it ("Cancelled by you.").
			return ec.ExitCode()
		}
		return 1
	}
}

// commandHelp prints c's flags on out.
func commandHelp(ctx context.Context, c command, out, errOut io.Writer) int {
	if err := c.run(ctx, []string{"-h"}, out, out); !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(errOut, "ferry-cli help %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// asksHelp reports whether a command's arguments ask for its help (-h,
// -help or --help before any "--").
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ferry-cli COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nEvery command takes --config DIR (default: the user config dir's Ferry folder).")
}

// newFlagSet returns a flag set for a subcommand, with --config registered.
func newFlagSet(name string, errOut io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("ferry-cli "+name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	cfg := fs.String("config", "", "configuration `DIR` (default: the user config dir's Ferry folder)")
	return fs, cfg
}

// parseFlags parses args, turning flag errors into errUsage. Flags may
// follow the paths (see interspersed). A mistyped flag is said in one line
// that says where the flags are listed, not in the whole list (which
// --help prints).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(interspersed(fs, args))
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	}
	return fmt.Errorf("%w: %v (%s --help lists its flags)", errUsage, err, fs.Name())
}

// interspersed lets flags follow the other arguments, as most command-line
// tools do ("send photo.jpg --to bob"; Go's flag package stops at the first
// path and would take "--to" for a file): it moves each flag, and the value
// of one that takes a value, before the others, which follow a "--". A "--"
// in args still ends the flags: what follows it is a path however it is
// spelled ("send --to bob -- -notes.txt"). A flag the set does not know is
// left for the parse to refuse.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
		case len(a) < 2 || a[0] != '-':
			rest = append(rest, a)
		default:
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			f := fs.Lookup(name)
			if f == nil {
				continue
			}
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			if i+1 == len(args) {
				return flags // its value is missing: the parse says so, with nothing after it to take
			}
			i++
			flags = append(flags, args[i])
		}
	}
	if len(rest) == 0 {
		return flags
	}
	return append(append(flags, "--"), rest...)
}

// envOptions are the engine options the environment sets (see package ferryenv).
func envOptions(o engine.Options) engine.Options {
	o.BufferedIO = ferryenv.BufferedIO()
	o.Compression = ferryenv.Compression()
	o.ProgressInterval = ferryenv.ProgressInterval()
	o.ManifestBudget = ferryenv.ManifestBudget()
	if o.Logger == nil {
		o.Logger = ferryenv.Logger()
	}
	o.Transport = ferryenv.Transport()
	return o
}
