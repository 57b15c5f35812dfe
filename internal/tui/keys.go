package tui

import "charm.land/bubbles/v2/key"

// keyMap is every key the console answers to; the help bar shows the ones that apply to the
// screen (shortHelp), `?` all of them (fullHelp).
type keyMap struct {
	Up, Down, Open, Back    key.Binding
	Mark, Replay, Status    key.Binding
	Filter, Copy, CopyCmd   key.Binding
	Processed, Help, Quit   key.Binding
	Send, Cancel, PageDown  key.Binding
	PageUp, ClearFilter     key.Binding
	Home, End               key.Binding
	readOnly, canMark       bool
	onPlan, onRun, onRecord bool
}

func newKeyMap() keyMap {
	return keyMap{
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:      key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown:    key.NewBinding(key.WithKeys("pgdown", "f"), key.WithHelp("pgdn", "page down")),
		Home:        key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "first")),
		End:         key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "last")),
		Open:        key.NewBinding(key.WithKeys("enter", "right", "l"), key.WithHelp("enter", "open")),
		Back:        key.NewBinding(key.WithKeys("esc", "left", "h", "backspace"), key.WithHelp("esc", "back")),
		Mark:        key.NewBinding(key.WithKeys("space", " "), key.WithHelp("space", "mark")),
		Replay:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "replay")),
		Status:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "status filter")),
		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		ClearFilter: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		Copy:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy address")),
		CopyCmd:     key.NewBinding(key.WithKeys("Y"), key.WithHelp("Y", "copy command")),
		Processed:   key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "processed get")),
		Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "all keys")),
		Quit:        key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Send:        key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "send")),
		Cancel:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// ShortHelp is the help bar of the screen.
func (k keyMap) ShortHelp() []key.Binding {
	switch {
	case k.onPlan:
		return []key.Binding{k.Send, k.Cancel, k.Quit}
	case k.onRun:
		return []key.Binding{k.Back, k.Quit}
	}
	b := []key.Binding{k.Open, k.Back}
	if k.canMark && !k.readOnly {
		b = append(b, k.Mark)
	}
	if !k.readOnly {
		b = append(b, k.Replay)
	}
	if k.onRecord {
		b = append(b, k.Copy, k.Processed)
	}
	return append(b, k.Filter, k.Status, k.Help, k.Quit)
}

// FullHelp is every key, by what it is for.
func (k keyMap) FullHelp() [][]key.Binding {
	move := []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End, k.Open, k.Back}
	view := []key.Binding{k.Filter, k.Status, k.Copy, k.CopyCmd, k.Processed}
	act := []key.Binding{k.Mark, k.Replay}
	if k.readOnly {
		act = nil
	}
	return [][]key.Binding{move, view, append(act, k.Help, k.Quit)}
}
