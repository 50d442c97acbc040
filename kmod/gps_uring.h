/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Asynchronous fences through io_uring (gps_uring.c): the file's
 * uring_cmd and the workqueue that runs them.
 */
#ifndef _GPS_URING_H
#define _GPS_URING_H

struct io_uring_cmd;

int gps_uring_init(void);
void gps_uring_exit(void);
int gps_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);

#endif /* _GPS_URING_H */
