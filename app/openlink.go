package app

import (
	"fmt"
	"net/url"

	"github.com/ferrydrop/ferry/internal/opener"
	"github.com/ferrydrop/ferry/ui"
)

// linkOpener opens links from received texts with the desktop's browser
// (xdg-open where there is one). Fyne's App.OpenURL starts xdg-open and
// never waits for it: a link no browser takes failed silently and left a
// defunct xdg-open behind (issue 26, finding 11). Here the opener is always
// waited for, and a failure it reports later goes to problem.
func linkOpener(problem func(what string, err error)) func(*url.URL) error {
	return func(link *url.URL) error {
		s, err := opener.Open(link.String())
		if err != nil {
			return &ui.Problem{Text: fmt.Sprintf("No web browser is set up on this computer. The link is %s.", link), Err: err}
		}
		go func() {
			if err := s.Wait(); err != nil && problem != nil {
				problem("Could not open the link", &ui.Problem{
					Text: fmt.Sprintf("No web browser could open %s. Copy the link and open it where you can.", link), Err: err})
			}
		}()
		return nil
	}
}
