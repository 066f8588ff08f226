#version 330 core
// Density display, fragment stage: log10 of the splatted surface density between low and high
// through a colour map (a 256-entry lookup texture), or, with a quantity, the colour of the
// mass-weighted mean quantity (linear between its low and high) dimmed by the density's log
// brightness. A colour bar of the map sits at the lower right when asked for.

uniform sampler2D density;
uniform sampler2D colour_map;   // 256 x 1, rgb
uniform vec2 density_range;     // log10 surface density shown from black/first to last colour
uniform vec2 quantity_range;    // the quantity's span, when it colours the image
uniform int show_quantity;
uniform ivec2 origin;
uniform vec4 colour_bar;        // x, y, width, height in pixels (width 0: no bar)

out vec4 colour;

vec3 lookup(float s) {
    return texture(colour_map, vec2(clamp(s, 0.0, 1.0) * (255.0 / 256.0) + 0.5 / 256.0, 0.5)).rgb;
}

void main() {
    vec2 pixel = gl_FragCoord.xy - vec2(origin);
    if (colour_bar.z > 0.0 && pixel.x >= colour_bar.x && pixel.x < colour_bar.x + colour_bar.z
            && pixel.y >= colour_bar.y && pixel.y < colour_bar.y + colour_bar.w) {
        colour = vec4(lookup((pixel.x - colour_bar.x) / colour_bar.z), 1.0);
        return;
    }
    vec4 sums = texelFetch(density, ivec2(pixel), 0);
    float span = max(density_range.y - density_range.x, 1e-6);
    float level = sums.r > 0.0 ? (log(sums.r) / log(10.0) - density_range.x) / span : -1.0;
    vec3 rgb;
    if (show_quantity == 1) {
        float mean = sums.r > 0.0 ? sums.g / sums.r : 0.0;
        float qspan = max(quantity_range.y - quantity_range.x, 1e-12);
        rgb = lookup((mean - quantity_range.x) / qspan) * clamp(level, 0.0, 1.0);
    } else {
        rgb = level < 0.0 ? vec3(0.0) : lookup(level);
    }
    colour = vec4(rgb, 1.0);  // the maps are display (sRGB) colours already
}
