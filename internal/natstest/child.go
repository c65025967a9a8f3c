package natstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// childEnv names the store directory of a child process that runs only
// the NATS server: the calling program again (see ServeChild), so that
// the server shares no CPU and no garbage collector with a load's
// clients, as a cluster's server would not.
const childEnv = "SLUICE_NATSTEST_CHILD_DIR"

// ServeChild, called first in a program's main, runs the server when the
// program was started by StartChild, until its stdin closes, and reports
// true; else it returns false at once.
func ServeChild() (bool, error) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		return false, nil
	}
	s, err := Start(dir)
	if err != nil {
		return true, err
	}
	defer s.Shutdown()
	fmt.Println(s.ClientURL())
	_, err = io.Copy(io.Discard, os.Stdin)
	return true, err
}

// Child is a NATS server in a child process.
type Child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	url string
}

// StartChild runs this program again as a NATS server storing under dir
// (its main must call ServeChild) and returns once it accepts clients.
func StartChild(dir string) (*Child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{cmd: cmd, in: in}
	line, err := bufio.NewReader(out).ReadString('\n')
	if c.url = strings.TrimSpace(line); c.url == "" {
		c.Shutdown()
		return nil, errors.Join(errors.New("natstest: the NATS server process did not start"), err)
	}
	return c, nil
}

// ClientURL is the server's client URL.
func (c *Child) ClientURL() string { return c.url }

// Shutdown stops the server and waits for its process.
func (c *Child) Shutdown() {
	c.in.Close()
	_ = c.cmd.Wait()
}
