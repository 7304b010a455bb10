package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// fileIdentity: the file index (on NTFS, with a sequence number that a
// reused record changes) and the creation time (which Windows gives a file
// created under a name deleted in the last 15 seconds: "tunnelling").
func fileIdentity(f *os.File) (string, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return "", err
	}
	return fmt.Sprintf("w%x.%x:%x.%x", info.FileIndexHigh, info.FileIndexLow,
		info.CreationTime.HighDateTime, info.CreationTime.LowDateTime), nil
}
