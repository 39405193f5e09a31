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

package expr

import (
	"strings"
)

// typeNames are the names CEL gives its types inside, as people write them in CEL. CEL's
// errors name durations, timestamps and JSON values by their protobuf types, which mean
// nothing to someone writing a condition.
var typeNames = strings.NewReplacer(
	"google.protobuf.Duration", "duration",
	"google.protobuf.Timestamp", "timestamp",
	"google.protobuf.NullValue", "null",
	"google.protobuf.Struct", "map",
	"google.protobuf.ListValue", "list",
	"google.protobuf.Value", "dyn",
	"google.protobuf.Any", "dyn",
	"google.protobuf.StringValue", "string",
	"google.protobuf.BoolValue", "bool",
	"google.protobuf.Int64Value", "int",
	"google.protobuf.DoubleValue", "double",
	"null_type", "null",
)

// plain rewrites a CEL error for people: type names as CEL spells them, and a bare "no such
// overload", which names neither the operator nor the values, with what usually causes it.
func plain(detail string) string {
	detail = typeNames.Replace(detail)
	if strings.HasPrefix(detail, "no such overload") {
		detail += ": an operator or function got a value of a type it does not take " +
			"(outputs of JSON steps are strings, doubles, bools, lists or maps; " +
			"convert with string(), int() or double(), or compare like with like)"
	}
	return detail
}

// typeName names a value's type for people.
func typeName(name string) string {
	return typeNames.Replace(name)
}
