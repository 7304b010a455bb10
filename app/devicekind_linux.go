package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// deviceKind is "laptop" or "desktop" from the DMI chassis type, or a
// battery in /sys/class/power_supply; "" when neither says.
func deviceKind() string {
	b, _ := os.ReadFile("/sys/class/dmi/id/chassis_type")
	batteries, _ := filepath.Glob("/sys/class/power_supply/*/type")
	hasBattery := false
	for _, f := range batteries {
		if t, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(t)) == "Battery" {
			hasBattery = true
		}
	}
	return kindOf(strings.TrimSpace(string(b)), hasBattery)
}

// kindOf reads a DMI chassis type (SMBIOS 3.x, section 7.4.1).
func kindOf(chassis string, battery bool) string {
	n, err := strconv.Atoi(chassis)
	switch {
	case err == nil && (n == 8 || n == 9 || n == 10 || n == 14 || n == 30 || n == 31 || n == 32):
		return "laptop" // portable, laptop, notebook, sub notebook, tablet, convertible, detachable
	case battery:
		return "laptop"
	case err == nil && (n == 3 || n == 4 || n == 5 || n == 6 || n == 7 || n == 13 || n == 15 || n == 16 || n == 35 || n == 36):
		return "desktop" // desktop, low profile, pizza box, mini tower, tower, all in one, space-saving, lunch box, mini PC, stick PC
	}
	return ""
}
