// Package cfglocale (process start-up, like a command: it is the one package
// outside cmd/ that reads the environment, for the GUI's main) keeps Fyne from printing "Error parsing user locale C"
// at every start where the locale is C or POSIX with an encoding
// ("LANG=C.UTF-8", the default of containers, CI runners and minimal
// installs).
//
// Fyne's lang package reads the locale in its init (through
// github.com/jeandeaual/go-locale), which strips the encoding, takes "C" for
// a language and logs the parse error. When the locale is C or POSIX with an
// encoding and LANGUAGE is unset, this package's init sets LANGUAGE=en,
// which go-locale reads first and gettext ignores under a C locale (so
// programs Ferry starts see no difference). It must run before Fyne's init:
// the app's main package imports it, it imports nothing but the standard
// library, and Go initialises packages in import-path order among those
// whose imports are done ("github.com/ferrydrop/..." sorts before
// "github.com/jeandeaual/go-locale", which Fyne's lang waits for). The
// packaging tests check the installed app's --version prints nothing else.
package cfglocale

import (
	"os"
	"strings"
)

func init() { fix(os.Getenv, os.Setenv) }

// fix sets LANGUAGE=en when the effective message locale (LC_ALL, else
// LC_MESSAGES, else LANG) is C or POSIX with an encoding or modifier and
// LANGUAGE is unset. The plain "C" and "POSIX", and real locales, are left
// alone: go-locale handles those.
func fix(getenv func(string) string, setenv func(string, string) error) {
	if getenv("LANGUAGE") != "" {
		return
	}
	loc := ""
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if loc = getenv(k); loc != "" {
			break
		}
	}
	if loc == "C" || loc == "POSIX" {
		return
	}
	lang, _, _ := strings.Cut(loc, ".")
	lang, _, _ = strings.Cut(lang, "@")
	if lang == "C" || lang == "POSIX" {
		setenv("LANGUAGE", "en")
	}
}
