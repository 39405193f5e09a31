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

// Package argocd runs the Argo CD health checks in docs/gitops the way Argo CD runs a
// resource.customizations health.lua: in gopher-lua, with the base, table and package
// libraries only, the object as the global obj, and a table of status and message returned.
package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Statuses are the health statuses Argo CD accepts from a script.
var Statuses = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

// Health is what a health check returned.
type Health struct {
	Status  string
	Message string
}

// Script reads the health check of a kind ("scene", "run", ...) from docs/gitops.
func Script(kind string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "docs", "gitops", kind+".lua"))
	return string(raw), err
}

// Run runs a health check on an object, as unstructured content.
func Run(script string, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decode(l, obj))
	if err := l.DoString(script); err != nil {
		return Health{}, err
	}
	table, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	h := Health{Status: lua.LVAsString(table.RawGetString("status")), Message: lua.LVAsString(table.RawGetString("message"))}
	if !slices.Contains(Statuses, h.Status) {
		return h, fmt.Errorf("the script returned status %q, which Argo CD does not know", h.Status)
	}
	return h, nil
}

// decode turns unstructured content into Lua values as Argo CD does: objects into tables
// with string keys, lists into sequences from 1, numbers into Lua numbers.
func decode(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for key, item := range v {
			t.RawSetH(lua.LString(key), decode(l, item))
		}
		return t
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(decode(l, item))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	default:
		return lua.LNil
	}
}
