package kubeconfig

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/mcpfleet/mcp/model"
)

// Settings are the settings that say which cluster a block means, in the provider block
// and in the state block alike: kubeconfig (a path) and context.
var Settings = []model.SettingSpec{
	{Name: "kubeconfig", Kind: model.SettingPath},
	{Name: "context", Kind: model.SettingString},
}

// NamespaceSetting is a namespace setting with its default.
func NamespaceSetting(def string) model.SettingSpec {
	return model.SettingSpec{Name: "namespace", Kind: model.SettingString, Default: def, Check: checkNamespace}
}

// FromSettings is Load of a block's kubeconfig and context Settings; an error, which
// says what was being done (doing), is a *model.SettingError of kubeconfig.
func FromSettings(s model.Settings, doing string) (*rest.Config, error) {
	cfg, err := Load(s.Str("kubeconfig"), s.Str("context"))
	if err != nil {
		return nil, &model.SettingError{Setting: "kubeconfig", Err: fmt.Errorf("%s: %w", doing, err)}
	}
	return cfg, nil
}

func checkNamespace(v model.SettingValue) error {
	if errs := validation.IsDNS1123Label(v.String); len(errs) > 0 {
		return fmt.Errorf("not a namespace name: %s", strings.Join(errs, "; "))
	}
	return nil
}
