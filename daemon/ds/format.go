package ds

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// formatName is the file in Dir recording who owns the store and its
// geometry.
const formatName = "ds.format"

// formatMagic is the first line of a format file; the number after it is
// the on-disk layout version.
const formatMagic = "strata-ds 1"

// maxFormatSize bounds what decodeFormat reads.
const maxFormatSize = 4 << 10

// format is the content of Dir/ds.format:
//
//	strata-ds 1
//	id ds1
//	block_size 65536
type format struct {
	ID        string
	BlockSize int
}

func (f format) encode() []byte {
	return fmt.Appendf(nil, "%s\nid %s\nblock_size %d\n", formatMagic, f.ID, f.BlockSize)
}

// decodeFormat parses a format file. It is strict: every key once, no
// unknown keys, values that Config.Validate would accept.
func decodeFormat(b []byte) (format, error) {
	var f format
	if len(b) > maxFormatSize {
		return f, fmt.Errorf("%w: format file is %d bytes", ErrFormat, len(b))
	}
	text, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return f, fmt.Errorf("%w: format file does not end in a newline", ErrFormat)
	}
	lines := strings.Split(string(text), "\n")
	if lines[0] != formatMagic {
		return f, fmt.Errorf("%w: format file starts with %q, want %q", ErrFormat, lines[0], formatMagic)
	}
	seen := map[string]bool{}
	for _, line := range lines[1:] {
		key, val, ok := strings.Cut(line, " ")
		if !ok || seen[key] {
			return f, fmt.Errorf("%w: bad format line %q", ErrFormat, line)
		}
		seen[key] = true
		switch key {
		case "id":
			if err := validID(val); err != nil {
				return f, fmt.Errorf("%w: %v", ErrFormat, err)
			}
			f.ID = val
		case "block_size":
			n, err := strconv.Atoi(val)
			if err != nil || strconv.Itoa(n) != val {
				return f, fmt.Errorf("%w: block size %q", ErrFormat, val)
			}
			if !validBlockSize(n) {
				return f, fmt.Errorf("%w: block size %d", ErrFormat, n)
			}
			f.BlockSize = n
		default:
			return f, fmt.Errorf("%w: unknown key %q", ErrFormat, key)
		}
	}
	if !seen["id"] || !seen["block_size"] {
		return f, fmt.Errorf("%w: format file lacks id or block_size", ErrFormat)
	}
	return f, nil
}

// loadFormat checks that dir's format file matches want, writing it when
// dir holds none yet.
func loadFormat(d Disk, dir string, want format) error {
	name := filepath.Join(dir, formatName)
	b, err := readAll(d, name)
	if errors.Is(err, fs.ErrNotExist) {
		return writeFormat(d, dir, want)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	got, err := decodeFormat(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if got.ID != want.ID {
		return fmt.Errorf("%w: %s belongs to data server %q, not %q", ErrFormat, dir, got.ID, want.ID)
	}
	if got.BlockSize != want.BlockSize {
		return fmt.Errorf("%w: %s was made with block size %d, config says %d", ErrFormat, dir, got.BlockSize, want.BlockSize)
	}
	return nil
}

// writeFormat writes the format file atomically: a synced temporary file
// renamed into place, then the directory synced.
func writeFormat(d Disk, dir string, f format) error {
	name := filepath.Join(dir, formatName)
	tmp := name + ".tmp"
	w, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return fmt.Errorf("write format: %w", err)
	}
	_, err = w.WriteAt(f.encode(), 0)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, name)
	}
	if err == nil {
		err = syncDir(d, dir)
	}
	if err != nil {
		return fmt.Errorf("write format: %w", err)
	}
	return nil
}

// readAll reads a small file whole.
func readAll(d Disk, name string) ([]byte, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxFormatSize+1)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b[:n], nil
}

// syncDir makes the entries of directory name durable.
func syncDir(d Disk, name string) error {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", name, err)
	}
	return nil
}
