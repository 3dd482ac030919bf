/* The region of each image that becomes the model's input: the whole image,
 * torchvision's RandomResizedCrop box, or the evaluation centre crop. */
#include <math.h>

#include "data/image_internal.h"

/* RandomResizedCrop's defaults: 8%..100% of the area, aspect 3/4..4/3. */
#define MIN_AREA 0.08
#define MAX_AREA 1.0
#define MIN_RATIO (3.0 / 4.0)
#define MAX_RATIO (4.0 / 3.0)
/* Resize(256) + CenterCrop(224): the crop keeps 224/256 of the shorter side. */
#define CENTER_FRACTION (224.0 / 256.0)

/* torchvision.transforms.RandomResizedCrop.get_params, with integer boxes
 * as there; Python's randint(a, b) inclusive is a + floor(u * (b - a + 1)). */
static void random_resized_box(int width, int height, nn_uniform_fn uniform, void *state,
                               nn_box *box) {
    double area = (double)width * height;
    double log_min = log(MIN_RATIO), log_max = log(MAX_RATIO);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = area * (MIN_AREA + (MAX_AREA - MIN_AREA) * uniform(state));
        double ratio = exp(log_min + (log_max - log_min) * uniform(state));
        int w = (int)lround(sqrt(target * ratio));
        int h = (int)lround(sqrt(target / ratio));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            int y = (int)(uniform(state) * (height - h + 1));
            int x = (int)(uniform(state) * (width - w + 1));
            *box = (nn_box){x, y, w, h};
            return;
        }
    }
    /* Fallback: the centre box of the allowed ratio nearest the image's. */
    double in_ratio = (double)width / height;
    int w = width, h = height;
    if (in_ratio < MIN_RATIO) h = (int)lround(w / MIN_RATIO);
    else if (in_ratio > MAX_RATIO) w = (int)lround(h * MAX_RATIO);
    if (h > height) h = height;
    if (w > width) w = width;
    *box = (nn_box){(width - w) / 2, (height - h) / 2, w, h};
}

void nn_crop_box_for(nn_crop_mode mode, int width, int height, int out_w, int out_h,
                     nn_uniform_fn uniform, void *state, nn_box *box) {
    switch (mode) {
    case NN_CROP_RANDOM_RESIZED:
        random_resized_box(width, height, uniform, state, box);
        return;
    case NN_CROP_CENTER: {
        /* The image is scaled so its shorter side becomes max(out)/0.875,
         * then the centred out_w x out_h is cut: in source pixels, a box of
         * out * shorter * 0.875 / max(out). */
        double shorter = width < height ? width : height;
        double longest_out = out_w > out_h ? out_w : out_h;
        double k = shorter * CENTER_FRACTION / longest_out;
        double w = out_w * k, h = out_h * k;
        *box = (nn_box){(width - w) / 2, (height - h) / 2, w, h};
        return;
    }
    case NN_CROP_NONE:
    default:
        *box = (nn_box){0, 0, width, height};
        return;
    }
}
