package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// configDir resolves --config: the flag's value, or the user config dir's Ferry folder.
func configDir(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the user config dir (%v): pass --config DIR", err)
	}
	return filepath.Join(base, "Ferry"), nil
}
