package cluster

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
