package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/internal/hooks"
)

// Settings is what sluice takes of Claude Code's --settings (a settings
// file, or the same document as a JSON string): its hooks, run after
// those of the settings files; its permission rules, added to
// --allowedTools and --disallowedTools; its default permission mode and
// model, when the command line names none; its additional directories.
// Ignored names the other keys, which sluice does not act on.
type Settings struct {
	Hooks       hooks.Config
	Allow, Deny []string
	DefaultMode string
	Model       string
	AddDirs     []string
	Ignored     []string
}

// LoadSettings reads --settings: JSON when it starts with "{", else the
// name of a file holding it.
func LoadSettings(spec string) (Settings, error) {
	data := []byte(spec)
	if !strings.HasPrefix(strings.TrimSpace(spec), "{") {
		var err error
		if data, err = os.ReadFile(spec); err != nil {
			return Settings{}, fmt.Errorf("--settings: %w", err)
		}
	}
	s, err := ParseSettings(data)
	if err != nil {
		return Settings{}, fmt.Errorf("--settings: %w", err)
	}
	return s, nil
}

// SettingsValue reads settings given as a JSON value, as the Agent SDK's
// initialize gives them: an object, or a string that LoadSettings takes.
func SettingsValue(raw json.RawMessage) (Settings, error) {
	var spec string
	if json.Unmarshal(raw, &spec) == nil {
		return LoadSettings(spec)
	}
	s, err := ParseSettings(raw)
	if err != nil {
		return Settings{}, fmt.Errorf("settings: %w", err)
	}
	return s, nil
}

// ParseSettings reads a Claude Code settings document.
func ParseSettings(data []byte) (Settings, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return Settings{}, fmt.Errorf("not a settings object: %w", err)
	}
	var s Settings
	for key, raw := range doc {
		var err error
		switch key {
		case "hooks":
			s.Hooks, err = hooks.Parse(data)
		case "model":
			err = json.Unmarshal(raw, &s.Model)
		case "permissions":
			var p struct {
				Allow                 []string        `json:"allow"`
				Deny                  []string        `json:"deny"`
				DefaultMode           string          `json:"defaultMode"`
				AdditionalDirectories []string        `json:"additionalDirectories"`
				Ask                   json.RawMessage `json:"ask"`
			}
			if err = json.Unmarshal(raw, &p); err == nil {
				s.Allow, s.Deny, s.DefaultMode, s.AddDirs = p.Allow, p.Deny, p.DefaultMode, p.AdditionalDirectories
				if len(p.Ask) > 0 && string(p.Ask) != "null" && string(p.Ask) != "[]" {
					// Rules that ask are what the mode does anyway.
					s.Ignored = append(s.Ignored, "permissions.ask")
				}
			}
		default:
			s.Ignored = append(s.Ignored, key)
		}
		if err != nil {
			return Settings{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	sort.Strings(s.Ignored)
	return s, nil
}
