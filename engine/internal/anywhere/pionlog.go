package anywhere

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLogs is the LoggerFactory of every pion component here (ICE, its
// mux, the TURN client): it writes to log, never to standard error, which
// pion's default does and which is the user's terminal (ferry-cli printed
// "ice ERROR: ... Failed to read UDP packet: closed" at the end of a
// relayed send). Pion's errors are Ferry's warnings (what fails that
// matters reaches the user through the call's own errors), its warnings
// Ferry's information (it warns of every candidate's socket closing at a
// session's end), its information Ferry's debug; its debug and trace are
// left out.
func pionLogs(log *slog.Logger) logging.LoggerFactory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return pionFactory{log}
}

type pionFactory struct{ log *slog.Logger }

func (f pionFactory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("pion", scope)}
}

// pionLogger is one pion component's logger.
type pionLogger struct{ log *slog.Logger }

func (l pionLogger) say(level slog.Level, msg string) {
	l.log.Log(context.Background(), level, msg)
}

func (l pionLogger) sayf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) {
		l.say(level, fmt.Sprintf(format, args...))
	}
}

func (pionLogger) Trace(string)          {}
func (pionLogger) Tracef(string, ...any) {}
func (pionLogger) Debug(string)          {}
func (pionLogger) Debugf(string, ...any) {}

func (l pionLogger) Info(msg string)                   { l.say(slog.LevelDebug, msg) }
func (l pionLogger) Infof(format string, args ...any)  { l.sayf(slog.LevelDebug, format, args...) }
func (l pionLogger) Warn(msg string)                   { l.say(slog.LevelInfo, msg) }
func (l pionLogger) Warnf(format string, args ...any)  { l.sayf(slog.LevelInfo, format, args...) }
func (l pionLogger) Error(msg string)                  { l.say(slog.LevelWarn, msg) }
func (l pionLogger) Errorf(format string, args ...any) { l.sayf(slog.LevelWarn, format, args...) }
