package inspect

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// spillFile makes a spill file of dir with no name at all (O_TMPFILE): nothing of it is ever
// in the directory, not even for the moment between a create and an unlink, which a lint
// killed while it spills (thousands of files a second with a small --memory-entries) would
// otherwise meet. On a filesystem or a kernel without O_TMPFILE it falls back to a named
// file unlinked at once. named says the file still has a name to remove.
func spillFile(dir string) (f *os.File, named bool, err error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err = os.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE, 0o600)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) {
		return unlinkedFile(dir)
	}
	return f, false, err
}
