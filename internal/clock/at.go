package clock

import "time"

// At is t as a person reads it, seen from now, in local time: "15:04" on
// the same day, "tomorrow 15:04" on the next, "Mon 7 Dec 15:04" later (a
// link of 30 hours said "until 12:22", which reads as today).
func At(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	y1, m1, d1 := t.Date()
	y2, m2, d2 := now.Date()
	switch {
	case y1 == y2 && m1 == m2 && d1 == d2:
		return t.Format("15:04")
	case time.Date(y2, m2, d2+1, 0, 0, 0, 0, time.Local).Equal(time.Date(y1, m1, d1, 0, 0, 0, 0, time.Local)):
		return "tomorrow " + t.Format("15:04")
	}
	return t.Format("Mon 2 Jan 15:04")
}
