package payload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Limits on what a payload may hold. A file the loader reads is at most
// MaxFileBytes; a document in it is at most MaxObjectBytes, the largest
// object etcd stores by default.
const (
	MaxFileBytes   = 8 << 20
	MaxObjectBytes = 1536 << 10
)

// FileError is a payload file the loader refuses to read, and why.
type FileError struct {
	File   string
	Reason string
}

func (e *FileError) Error() string { return e.File + ": " + e.Reason }

// readFile reads name inside root, which os.Root confines: a path or a
// symlink that leads out of the payload is refused. Only regular files
// are read, so a FIFO or a device cannot hang the loader or fill its
// memory, and at most MaxFileBytes of them.
func readFile(root *os.Root, name string) ([]byte, error) {
	info, err := root.Stat(name)
	if err != nil {
		return nil, describeOpenError(name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, &FileError{File: name, Reason: fmt.Sprintf("not a regular file (%s); a payload holds regular files only", info.Mode().Type())}
	}
	if info.Size() > MaxFileBytes {
		return nil, tooLarge(name, info.Size())
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, describeOpenError(name, err)
	}
	defer f.Close()
	// Read into a buffer of the size Stat gave, rather than let ReadAll
	// double its way there (a payload load allocated twice its bytes).
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(f, MaxFileBytes+1))
	data := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(name, int64(len(data)))
	}
	return data, nil
}

func tooLarge(name string, size int64) error {
	return &FileError{File: name, Reason: fmt.Sprintf("%d bytes, more than the %d MiB a payload file may hold", size, MaxFileBytes>>20)}
}

// describeOpenError names a path that escapes the payload as such.
func describeOpenError(name string, err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return &FileError{File: name, Reason: fmt.Sprintf("cannot be read inside the payload (%v); a symlink may not lead out of the payload", pathErr.Err)}
	}
	return err
}

// ReadFile reads the file name inside root as the loader reads a payload
// file, with the same refusals and limit, for tools that handle payload
// files without loading them (packing a release image).
func ReadFile(root *os.Root, name string) ([]byte, error) {
	return readFile(root, name)
}
