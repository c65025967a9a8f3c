package awsauth

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sections are the named sections of the shared config and credentials
// files, as key → value, keys lower-cased. Profiles are keyed by name
// ("default", "work"); the config file's other sections keep their kind
// ("sso-session corp").
type sections map[string]map[string]string

// readFiles reads the shared config file, then the shared credentials
// file, whose values win (as in the AWS CLI and SDKs). A missing file is
// no error; an unreadable one is.
func readFiles(configPath, credentialsPath string) (sections, error) {
	s := sections{}
	if err := s.read(configPath, true); err != nil {
		return nil, err
	}
	if err := s.read(credentialsPath, false); err != nil {
		return nil, err
	}
	return s, nil
}

// read merges one file into s. In the config file a profile's section is
// "[profile NAME]" ("[default]" too); in the credentials file it is
// "[NAME]". Lines under a key with an empty value that are indented (a
// service's nested settings, such as "s3 =") are skipped.
func (s sections) read(path string, config bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	var cur map[string]string
	nested := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name, ok := strings.CutSuffix(line, "]")
			if !ok {
				return fmt.Errorf("%s:%d: a section header without its ']'", path, n)
			}
			cur, nested = s.section(strings.TrimSpace(name[1:]), config), false
			continue
		}
		if nested && raw[0] != line[0] {
			continue // a nested setting
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s:%d: expected key = value", path, n)
		}
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		nested = value == ""
		if cur != nil && !nested {
			cur[key] = stripComment(value)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// section returns the map for a header's name, nil for a section this
// chain does not read.
func (s sections) section(header string, config bool) map[string]string {
	name := header
	if config {
		kind, rest, ok := strings.Cut(header, " ")
		switch {
		case !ok && header == "default":
		case ok && kind == "profile":
			name = strings.TrimSpace(rest)
		case ok && kind == "sso-session":
			name = "sso-session " + strings.TrimSpace(rest)
		default:
			return nil
		}
	}
	if s[name] == nil {
		s[name] = map[string]string{}
	}
	return s[name]
}

// stripComment drops an inline comment: " #" or " ;" and what follows.
func stripComment(v string) string {
	for i := 1; i < len(v); i++ {
		if (v[i] == '#' || v[i] == ';') && (v[i-1] == ' ' || v[i-1] == '\t') {
			return strings.TrimSpace(v[:i])
		}
	}
	return v
}

// filePaths are the shared files' locations: AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE, or ~/.aws/config and ~/.aws/credentials.
func filePaths(getenv func(string) string, home string) (config, credentials string) {
	config, credentials = getenv("AWS_CONFIG_FILE"), getenv("AWS_SHARED_CREDENTIALS_FILE")
	if config == "" {
		config = filepath.Join(home, ".aws", "config")
	}
	if credentials == "" {
		credentials = filepath.Join(home, ".aws", "credentials")
	}
	return config, credentials
}
