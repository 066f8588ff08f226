#version 330 core
// Density, vertex stage: each particle becomes a disc whose radius is its smoothing length's
// kernel support (2h: one length for all, or each particle's own, the distance to its k-th
// nearest neighbour) projected to framebuffer pixels, carrying its mass and the quantity the
// colour map shows (its speed, or a value per particle).

uniform mat4 view_projection;
uniform float support;           // kernel support radius 2h, world units (adaptive: a multiplier)
uniform int adaptive;            // 1: each particle's own support, from its neighbours
uniform float pixels_per_unit;   // framebuffer pixels per world unit at clip w = 1
uniform float min_radius;        // pixels: smaller discs are widened so the kernel is resolved
uniform float max_radius;        // pixels: the driver's point size limit, halved
uniform int quantity_mode;       // 0: mass only, 1: speed, 2: per-particle values
uniform float inverse_interval;  // 1 / time between the previous and current frame

uniform float weights[16];      // mass multiplier per population label (0 hides it)

in vec3 position;
in vec3 previous;
in float mass;
in float value;
in float population;
in float particle_support;       // adaptive: 2h of this particle, world units

out float splat_mass;
out float splat_quantity;
out float splat_radius;

void main() {
    gl_Position = view_projection * vec4(position, 1.0);
    float world = adaptive == 1 ? support * particle_support : support;
    float radius = world * pixels_per_unit / max(gl_Position.w, 1e-6);
    radius = clamp(radius, min_radius, max_radius);
    gl_PointSize = 2.0 * radius;
    splat_radius = radius;
    splat_mass = mass * weights[int(population) & 15];
    splat_quantity = quantity_mode == 1 ? length(position - previous) * inverse_interval
                   : quantity_mode == 2 ? value : 0.0;
}
