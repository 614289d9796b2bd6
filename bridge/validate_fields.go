package bridge

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fieldNamePattern is what a form field's name may be.
var fieldNamePattern = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// validateChoices checks a question's choices: how many, and each one
// not empty, not too long and not listed twice.
func validateChoices(ve *ValidationError, choices []string) {
	if len(choices) > MaxChoices {
		ve.add("choices: at most %d, got %d", MaxChoices, len(choices))
	}
	for i, c := range choices {
		switch {
		case strings.TrimSpace(c) == "":
			ve.add("choices[%d]: must not be empty", i)
		case utf8.RuneCountInString(c) > MaxChoiceText:
			ve.add("choices[%d]: must be at most %d characters", i, MaxChoiceText)
		case sameOptionBefore(choices, i):
			ve.add("choices[%d]: %q is listed twice", i, c)
		}
	}
}

// sameOptionBefore reports whether options[i] is listed earlier, compared
// as answers are matched (ignoring case and surrounding space): a person
// typing it could not pick one of the two.
func sameOptionBefore(options []string, i int) bool {
	t := strings.TrimSpace(options[i])
	for _, o := range options[:i] {
		if strings.EqualFold(strings.TrimSpace(o), t) {
			return true
		}
	}
	return false
}

// validateFields checks a form's fields: their number and size together,
// then each field, named by its name (or its place when the name is bad).
func validateFields(ve *ValidationError, fields []Field) {
	if len(fields) == 0 {
		return
	}
	if len(fields) > MaxFields {
		ve.add("fields: at most %d, got %d", MaxFields, len(fields))
	}
	if raw, err := plainJSON(fields); err == nil && len(raw) > MaxFieldsJSON {
		ve.add("fields: are %d bytes of JSON together; at most %d (16 KiB)", len(raw), MaxFieldsJSON)
	}
	seen := map[string]bool{}
	for i, f := range fields {
		name := f.Name
		if !fieldNamePattern.MatchString(name) {
			ve.add("fields[%d].name: %q must be 1 to 64 lower-case letters, digits and _", i, name)
			name = fmt.Sprintf("fields[%d]", i)
		} else if seen[name] {
			ve.add("%s: the name is used by two fields", name)
		}
		seen[f.Name] = true
		validateField(ve, name, f)
	}
}

// validateField checks one field, its problems prefixed with name: its
// kind, its options, and that each setting suits its kind.
func validateField(ve *ValidationError, name string, f Field) {
	switch f.Kind {
	case FieldText, FieldNumber, FieldChoice, FieldMultiChoice, FieldDate, FieldToggle:
	case "":
		ve.add("%s: kind is required (text, number, choice, multi-choice, date or toggle)", name)
	default:
		ve.add("%s: kind must be text, number, choice, multi-choice, date or toggle, not %q", name, f.Kind)
	}
	if f.Kind == FieldChoice || f.Kind == FieldMultiChoice {
		validateFieldOptions(ve, name, f)
	} else if len(f.Options) > 0 {
		ve.add("%s: only choice and multi-choice fields take options", name)
	}
	if f.Kind != FieldNumber && (f.Min != nil || f.Max != nil || f.Integer) {
		ve.add("%s: min, max and integer apply to number fields only", name)
	}
	if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
		ve.add("%s: min %s is greater than max %s", name, formatNumber(*f.Min), formatNumber(*f.Max))
	}
	for _, p := range []*float64{f.Min, f.Max} {
		if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
			ve.add("%s: min and max must be finite numbers", name)
		}
	}
	if f.Kind != FieldText && (f.MaxLength != 0 || f.Multiline) {
		ve.add("%s: max_length and multiline apply to text fields only", name)
	}
	if f.MaxLength < 0 {
		ve.add("%s: max_length must not be negative", name)
	}
	if f.Kind != FieldDate && f.DateTime {
		ve.add("%s: date_time applies to date fields only", name)
	}
	if utf8.RuneCountInString(f.Label) > 200 {
		ve.add("%s: label must be at most 200 characters", name)
	}
	if utf8.RuneCountInString(f.Description) > 1000 {
		ve.add("%s: description must be at most 1000 characters", name)
	}
}

// validateFieldOptions checks a choice field's options, as validateChoices
// checks a question's choices.
func validateFieldOptions(ve *ValidationError, name string, f Field) {
	if len(f.Options) == 0 {
		ve.add("%s: a %s field needs options", name, f.Kind)
	}
	if len(f.Options) > MaxOptions {
		ve.add("%s: at most %d options, got %d", name, MaxOptions, len(f.Options))
	}
	for j, o := range f.Options {
		switch {
		case strings.TrimSpace(o) == "":
			ve.add("%s: options[%d] must not be empty", name, j)
		case utf8.RuneCountInString(o) > MaxChoiceText:
			ve.add("%s: options[%d] must be at most %d characters", name, j, MaxChoiceText)
		case sameOptionBefore(f.Options, j):
			ve.add("%s: option %q is listed twice", name, o)
		}
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
