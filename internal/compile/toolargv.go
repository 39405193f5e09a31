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

package compile

import "k8s.io/apimachinery/pkg/util/validation/field"

// CheckToolArgv refuses a container tool's command and args (at cp) through which the
// arguments a model gives could rewrite the program, as CheckPrograms does for container
// steps: no template in the program's name, a shell's options or its script file; only
// shquote'd actions in the script of sh -c; none in the code of python -c and the like.
func CheckToolArgv(cp *field.Path, command, args []string) field.ErrorList {
	return checkArgv(cp, command, args)
}
