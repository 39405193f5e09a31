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

package naming

// MemoryConfigMapName names the ConfigMap that holds one store of a Scene's memory:
// ergon-memory-<memory>-<hash>, where the hash covers the memory's name, its scope and the
// scope's key (the Scene's name, or the person behind the Run). The key appears only hashed,
// so no person's name is in the object's name.
func MemoryConfigMapName(memory, scope, key string) string {
	return unique(MaxSubdomainLength, []string{"ergon-memory", memory}, "memory", memory, scope, key)
}
