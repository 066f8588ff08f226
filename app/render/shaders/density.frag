#version 330 core
// Density, fragment stage: the 2D cubic-spline kernel (Monaghan 1992), normalised over the
// disc's area in pixels, times the particle's mass, added into the float target (blending ONE,
// ONE). A resolved particle adds its mass to the target's sum, so the image's total is
// proportional to the mass in view. Channels: r = sum m W (surface density per pixel),
// g = sum m W q (mass-weighted quantity; divide by r for the mean).

in float splat_mass;
in float splat_quantity;
in float splat_radius;

out vec4 accumulated;

const float PI = 3.14159265358979;

void main() {
    vec2 offset = gl_PointCoord * 2.0 - 1.0;
    float q = 2.0 * length(offset);      // r / h, the support being 2h
    if (q >= 2.0) {
        discard;
    }
    float w = q < 1.0 ? 1.0 - 1.5 * q * q + 0.75 * q * q * q : 0.25 * pow(2.0 - q, 3.0);
    float h = 0.5 * splat_radius;
    float kernel = w * 10.0 / (7.0 * PI * h * h);
    float weighted = splat_mass * kernel;
    accumulated = vec4(weighted, weighted * splat_quantity, 0.0, 0.0);
}
