//go:build !linux

package inspect

import "os"

// spillFile makes a spill file of dir, unlinked at once where the system allows it (see
// unlinkedFile). named says the file still has a name to remove.
func spillFile(dir string) (*os.File, bool, error) { return unlinkedFile(dir) }
