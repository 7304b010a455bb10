package cfglocale

import "testing"

func TestFix(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // LANGUAGE afterwards, "" if unset
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "en"},
		{map[string]string{"LC_ALL": "C.utf8"}, "en"},
		{map[string]string{"LC_ALL": "POSIX.UTF-8"}, "en"},
		{map[string]string{"LC_MESSAGES": "C@euro", "LANG": "de_DE.UTF-8"}, "en"},
		{map[string]string{"LC_ALL": "C.UTF-8", "LANGUAGE": "fr"}, "fr"},
		{map[string]string{"LANG": "de_DE.UTF-8"}, ""},
		{map[string]string{"LC_ALL": "de_DE.UTF-8", "LANG": "C.UTF-8"}, ""},
		{map[string]string{"LANG": "C"}, ""},
		{map[string]string{"LANG": "POSIX"}, ""},
		{map[string]string{}, ""},
		{map[string]string{"LANG": "Chinese"}, ""},
	} {
		env := map[string]string{}
		for k, v := range tc.env {
			env[k] = v
		}
		fix(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
		if got := env["LANGUAGE"]; got != tc.want {
			t.Errorf("%v: LANGUAGE = %q, want %q", tc.env, got, tc.want)
		}
	}
}
