// Command ferry is Ferry's desktop app: drop files on a nearby device to send
// them, accept incoming files with one click, keep receiving from the tray.
//
// Usage:
//
//	ferry [--config DIR] [--minimized] [FILE...]
//	ferry --version
//
// --config DIR keeps identity, trust, settings and history in DIR instead of
// the user config dir (separate instances on one machine); --minimized starts
// in the tray (used by the login item; only where a tray shows icons). FILEs
// open the device chooser to send them. One Ferry runs per config dir: a
// later launch hands its FILEs to the running one, which raises its window,
// and exits (file managers' "Open with Ferry" works this way).
package main

import (
	_ "embed"
	"flag"
	"fmt"
	"os"

	"github.com/ferrydrop/ferry/app"
	_ "github.com/ferrydrop/ferry/app/cfglocale" // before Fyne's init: no "Error parsing user locale C"
	"github.com/ferrydrop/ferry/internal/version"
)

//go:embed assets/icon.png
var icon []byte

func main() {
	config := flag.String("config", "", "config `dir` (default: the user config dir/Ferry)")
	minimized := flag.Bool("minimized", false, "start minimised to the tray")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("ferry", version.Get())
		return
	}
	if err := app.Run(app.Options{ConfigDir: *config, Minimized: *minimized, Files: flag.Args(), Icon: icon}); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		app.ShowStartError(icon, err) // no terminal shows the line above when started from a menu
		os.Exit(1)
	}
}
