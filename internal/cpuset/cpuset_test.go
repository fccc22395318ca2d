package cpuset

import "testing"

func TestHalve(t *testing.T) {
	tests := []struct {
		cpus           []int
		target, client string
	}{
		{[]int{0, 1}, "", ""},
		{[]int{0, 1, 2}, "", ""},
		{[]int{3, 2, 1, 0}, "0-1", "2-3"},
		{[]int{0, 1, 2, 3, 4}, "0-1", "2-4"},
		{[]int{0, 2, 4, 6, 8, 9}, "0,2,4", "6,8-9"},
	}
	for _, tt := range tests {
		target, client := Halve(tt.cpus)
		if Format(target) != tt.target || Format(client) != tt.client {
			t.Errorf("Halve(%v) = %q %q, want %q %q", tt.cpus, Format(target), Format(client), tt.target, tt.client)
		}
	}
	if got := (Split{}).String(); got != "shared" {
		t.Errorf("shared split reads %q", got)
	}
	if got := (Split{Target: "0-1", Client: "2-3"}).String(); got != "target=0-1 client=2-3" {
		t.Errorf("split reads %q", got)
	}
}
