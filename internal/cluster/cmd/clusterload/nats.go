package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sluicehq/sluice/internal/natstest"
)

// natsServer is the cluster's NATS server, in this process or in a child.
type natsServer interface {
	ClientURL() string
	// Bytes is what the server received and sent so far.
	Bytes() (int64, error)
	Shutdown()
}

type inProcess struct{ *server.Server }

func startNATS(dir string) (natsServer, error) {
	s, err := natstest.Start(dir)
	if err != nil {
		return nil, err
	}
	return inProcess{s}, nil
}

func (s inProcess) Bytes() (int64, error) {
	v, err := s.Varz(nil)
	if err != nil {
		return 0, err
	}
	return v.InBytes + v.OutBytes, nil
}

// natsChildEnv names the store directory of a child that runs only the
// NATS server: this program again, so that the server shares no process
// (no CPU, no garbage collector) with the load's clients.
const natsChildEnv = "CLUSTERLOAD_NATS_DIR"

// natsChild runs the server until its stdin closes: it prints the client
// URL, then answers each line read with the bytes in and out so far.
func natsChild(dir string) error {
	s, err := natstest.Start(dir)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	fmt.Println(s.ClientURL())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		v, err := s.Varz(nil)
		if err != nil {
			return err
		}
		fmt.Println(v.InBytes + v.OutBytes)
	}
	return in.Err()
}

type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	url string
}

func startNATSChild(dir string) (natsServer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), natsChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	if !c.out.Scan() {
		c.Shutdown()
		return nil, errors.New("the NATS server process did not start")
	}
	c.url = strings.TrimSpace(c.out.Text())
	return c, nil
}

func (c *child) ClientURL() string { return c.url }

func (c *child) Bytes() (int64, error) {
	if _, err := io.WriteString(c.in, "varz\n"); err != nil {
		return 0, err
	}
	if !c.out.Scan() {
		return 0, errors.New("the NATS server process ended")
	}
	return strconv.ParseInt(strings.TrimSpace(c.out.Text()), 10, 64)
}

func (c *child) Shutdown() {
	c.in.Close()
	c.cmd.Wait()
}
