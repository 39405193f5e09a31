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

package certfiles

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The Copier reads a real API server's Secret, as the manager's does.
func TestTheCopierFollowsTheSecretTheRotatorFills(t *testing.T) {
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd; is KUBEBUILDER_ASSETS set (make test does it)? %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dir := filepath.Join(t.TempDir(), "serving-certs")
	key := types.NamespacedName{Namespace: "default", Name: "webhook-tls"}
	copier := &Copier{Reader: k8s, Secret: key, Dir: dir, Wait: 20 * time.Millisecond, Refresh: 50 * time.Millisecond}
	if copier.NeedLeaderElection() {
		t.Error("every replica serves webhooks, so every replica needs the files")
	}
	done := make(chan error, 1)
	go func() { done <- copier.Start(ctx) }()

	read := func(name string) string {
		raw, _ := os.ReadFile(filepath.Join(dir, name))
		return string(raw)
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}

	// No Secret yet, then one the rotator has not filled: nothing is written.
	time.Sleep(100 * time.Millisecond)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "tls.crt")); !os.IsNotExist(err) {
		t.Fatalf("a certificate was written from an empty Secret: %v", err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the directory is %v (%v), want mode 0700", info, err)
	}

	secret.Data = map[string][]byte{"tls.crt": []byte("cert-1"), "tls.key": []byte("key-1")}
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually("the first certificate is written", func() bool { return read("tls.crt") == "cert-1" })
	if read("tls.key") != "key-1" {
		t.Errorf("key is %q, want key-1", read("tls.key"))
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v (%v), want mode 0600", name, info, err)
		}
	}

	secret.Data = map[string][]byte{"tls.crt": []byte("cert-2"), "tls.key": []byte("key-2")}
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually("the renewed certificate is written", func() bool { return read("tls.crt") == "cert-2" && read("tls.key") == "key-2" })
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d files, want tls.crt and tls.key only", len(entries))
	}

	// The rotator's Secret has the CA too: step pods trust the artifact endpoint by it.
	secret.Data = map[string][]byte{"tls.crt": []byte("cert-3"), "tls.key": []byte("key-3"), "ca.crt": []byte("ca-3")}
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually("the CA is written with the certificate", func() bool { return read("tls.crt") == "cert-3" && read("ca.crt") == "ca-3" })

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v when its context ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Start did not return when its context ended")
	}
}

func TestTheCopierFailsWhenItCannotMakeItsDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := (&Copier{Dir: filepath.Join(file, "certs")}).Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded with a directory under a file")
	}
}
