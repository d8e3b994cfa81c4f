package personality

// Arguments of personality(2) (linux/personality.h).
const (
	Linux = 0          // PER_LINUX: the only persona a target runs under
	Query = 0xffffffff // reads the persona without changing it
)
