package model

import "testing"

func TestAlertWords(t *testing.T) {
	a := Alert{Labels: map[string]string{"alertname": "NodeDown", "severity": "critical", "instance": `a"b`}}
	if got, want := a.String(), `NodeDown{instance="a\"b", severity="critical"}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	var many []Alert
	for range 7 {
		many = append(many, Alert{Labels: map[string]string{"alertname": "X"}})
	}
	if got, want := DescribeAlerts(many), "X{}, X{}, X{}, X{}, X{}, and 2 more"; got != want {
		t.Errorf("DescribeAlerts = %s, want %s", got, want)
	}
	if got := (AlertGate{PrometheusURL: "http://p:9090"}).String(); got != "no firing alerts at http://p:9090" {
		t.Errorf("gate String() = %s", got)
	}
}
