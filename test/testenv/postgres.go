/*
Copyright 2026 The Ergon Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvPostgresBin names the directory of PostgreSQL's server binaries (hack/postgres.sh bin);
// the Makefile's test target sets it.
const EnvPostgresBin = "ERGON_POSTGRES_BIN"

// Postgres is a PostgreSQL server the tests started: a real one, listening only on a Unix
// socket in its own temporary directory.
type Postgres struct {
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	// URL reaches the server's postgres database as the superuser ergon.
	URL string
}

// StartPostgres initializes a database cluster in a temporary directory and starts its
// server from the binaries in bin. When the tests run as root, the server runs as nobody:
// initdb refuses root.
func StartPostgres(bin string) (*Postgres, error) {
	dir, err := os.MkdirTemp("", "ergon-postgres-")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("the server cannot run as root, and there is no user nobody: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "ergon", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	log := &syncBuffer{}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off", "-c", "max_connections=200")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p := &Postgres{dir: dir, cmd: cmd, exited: exited, URL: "postgres://ergon@/postgres?host=" + dir + "&sslmode=disable"}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if strings.Contains(log.String(), "ready to accept connections") {
			return p, nil
		}
		select {
		case <-exited:
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres ended as it started:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("postgres did not start in 30s:\n%s", log.String())
		}
	}
}

// syncBuffer is a log the server writes while the tests read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// DatabaseURL is the URL of another database of the same server.
func (p *Postgres) DatabaseURL(name string) string {
	return "postgres://ergon@/" + name + "?host=" + p.dir + "&sslmode=disable"
}

// Stop stops the server at once and removes its directory.
func (p *Postgres) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = os.RemoveAll(p.dir)
}
