package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/tool"
)

// maxLinks bounds symlink resolution, as the kernel's ELOOP does.
const maxLinks = 40

// errTooManyLinks is returned for a symlink loop.
var errTooManyLinks = errors.New("too many levels of symbolic links")

// ResolvePath turns p (absolute, or relative to env.WorkDir) into a cleaned
// absolute path with every symlink resolved, and checks that it is inside
// env.WorkDir or one of env.AllowedDirs (themselves resolved). Components
// that do not exist yet (a file Write will create) are kept as given; a
// dangling symlink is followed to where it points, so it cannot be used to
// create a file outside.
//
// The check is made before the call touches the file: a symlink swapped in
// between is not guarded against (the model is not an adversary racing its
// own tools; Bash could do anything anyway).
func ResolvePath(env *tool.Env, p string) (string, error) {
	if env == nil || env.WorkDir == "" {
		return "", ErrNoWorkDir
	}
	if p == "" {
		return "", fmt.Errorf("%w: empty path", ErrInvalidParams)
	}
	work, err := filepath.Abs(env.WorkDir)
	if err != nil {
		return "", fmt.Errorf("working directory %q: %w", env.WorkDir, err)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(work, p)
	}
	real, err := resolveLinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	for _, root := range append([]string{work}, env.AllowedDirs...) {
		if root == "" {
			continue
		}
		if !filepath.IsAbs(root) {
			root = filepath.Join(work, root)
		}
		r, err := resolveLinks(filepath.Clean(root))
		if err != nil {
			continue // An allowed directory that cannot be resolved allows nothing.
		}
		if within(r, real) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%s: %w", p, tool.ErrOutsideWorkDir)
}

// within reports whether p is root or below it; both are clean and absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolveLinks resolves the symlinks of the clean absolute path p component by
// component. Unlike filepath.EvalSymlinks it accepts paths whose tail does not
// exist, and it follows dangling symlinks to their (missing) target.
func resolveLinks(p string) (string, error) {
	vol := filepath.VolumeName(p)
	done := vol + string(filepath.Separator)
	rest := splitPath(p[len(vol):])
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing component can be a symlink.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", errTooManyLinks
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			done = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		rest = append(splitPath(target), rest...)
	}
	return done, nil
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}
