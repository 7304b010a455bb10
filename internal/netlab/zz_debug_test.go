//go:build labdebug

package netlab

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestDebugShell(t *testing.T) {
	lab := newLab(t, Config{})
	lab.SetImpairment("main", Both, Impairment{Delay: 10 * time.Millisecond, Rate: 100e6})
	snd, _ := lab.Namespace(Sender)
	rcv, _ := lab.Namespace(Receiver)
	cmd := exec.Command("bash", os.Getenv("DEBUG_SCRIPT"), snd, rcv)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", lab.Stats())
}
