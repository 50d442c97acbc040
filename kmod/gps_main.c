// SPDX-License-Identifier: GPL-2.0
/* placeholder while the driver is written; replaced in the next commit */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/gps.h>

static const struct file_operations gps_fops = { .owner = THIS_MODULE };
static struct miscdevice gps_misc = {
	.minor = MISC_DYNAMIC_MINOR, .name = "gps", .fops = &gps_fops,
};
static int __init gps_init(void) { return misc_register(&gps_misc); }
static void __exit gps_exit(void) { misc_deregister(&gps_misc); }
module_init(gps_init);
module_exit(gps_exit);
MODULE_LICENSE("GPL");
