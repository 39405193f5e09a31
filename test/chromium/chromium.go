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

// Package chromium starts the headless Chromium the console's browser tests and benchmark
// drive: Debian's chromium package, at 1280x800, with nothing that reaches the network on
// its own. A package of its own, so that suites without a browser do not compile chromedp.
package chromium

import (
	"context"
	"errors"
	"os/exec"
	"slices"

	"github.com/chromedp/chromedp"
)

// ErrMissing says chromium is not on PATH.
var ErrMissing = errors.New("no chromium on PATH: apt-get install chromium")

// Start starts a browser and returns its context, for chromedp.Run, and what stops it. The
// browser starts with the first action run in the context: run that one in this context
// itself, not one with a timeout, whose end would close the browser.
func Start() (context.Context, context.CancelFunc, error) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return nil, nil, ErrMissing
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("ignore-certificate-errors", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	return bctx, func() { cancel(); cancelAlloc() }, nil
}
