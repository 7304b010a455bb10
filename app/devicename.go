package app

import (
	"os/user"
	"strings"
)

// friendlyName is the device name a new install announces (issue 26,
// finding 10): the user's full name from the account and the kind of
// device ("Alice Smith's laptop"), else the login name ("alice's
// desktop"), else "" so that the engine uses the host name as a last
// resort. The user can change it in Settings as before.
func friendlyName() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return nameFor(u.Name, u.Username, deviceKind())
}

// nameFor makes the name from an account's full name (GECOS: its first
// comma-separated field), its login name and the kind of device.
func nameFor(fullName, login, kind string) string {
	who, _, _ := strings.Cut(fullName, ",")
	who = strings.TrimSpace(who)
	if who == "" {
		who = strings.TrimSpace(login)
		// Windows login names carry the domain ("HOST\\alice").
		if i := strings.LastIndexAny(who, `\/`); i >= 0 {
			who = who[i+1:]
		}
	}
	if who == "" || who == "root" {
		return ""
	}
	if kind == "" {
		kind = "computer"
	}
	return who + "'s " + kind
}
