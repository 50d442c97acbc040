/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a change of a knob must do, after the new value is in place: the
 * flags of core/gps_knob_list.h's rows, one rule for both engines (the
 * driver's in kmod/gps_sysfs.c, the native engine's in
 * lib/engine_user_knobs.c).
 */
#ifndef _GPS_KNOB_FLAGS_H
#define _GPS_KNOB_FLAGS_H

#define GPS_KNOB_WAKE		(1U << 0)	/* the push threads look again */
#define GPS_KNOB_LINK_RESET	(1U << 1)	/* the links forget the backlog */
#define GPS_KNOB_QUEUE		(1U << 2)	/* the queues reshaped */
#define GPS_KNOB_QUIESCE	(1U << 3)	/* threads see the new rule */

#endif /* _GPS_KNOB_FLAGS_H */
